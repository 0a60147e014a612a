// RowOpType: what one row operation does (insert, update, ...), for WriteOperation
// (client.h) and the row-operations block that carries it on the wire.
#pragma once

#include <cstdint>

#include "nyala/export.h"

namespace nyala {

NYALA_EXPORT_BEGIN

enum class RowOpType : uint8_t {
  kInsert = 1,
  kUpsert = 2,
  kUpdate = 3,
  kDelete = 4,
  kInsertIgnore = 5,  // INSERT; a row that exists already is not an error
  kUpdateIgnore = 6,  // UPDATE; a missing row is not an error
  kDeleteIgnore = 7,  // DELETE; a missing row is not an error
  // Not writes: the rows of CreateTable's range partitioning (partition.h).
  kSplitRow = 8,
  kRangeLowerBound = 9,
  kRangeUpperBound = 10,
};
constexpr int kMaxRowOpType = 10;

// "INSERT", "UPDATE_IGNORE", "SPLIT_ROW", ...; "UNKNOWN" otherwise.
const char* RowOpTypeName(RowOpType type);
inline bool IsWriteOp(RowOpType type) {
  return type >= RowOpType::kInsert && type <= RowOpType::kDeleteIgnore;
}
inline bool IsInsertLike(RowOpType t) {
  return t == RowOpType::kInsert || t == RowOpType::kUpsert || t == RowOpType::kInsertIgnore;
}
inline bool IsUpdateLike(RowOpType t) {
  return t == RowOpType::kUpdate || t == RowOpType::kUpdateIgnore;
}
inline bool IsDeleteLike(RowOpType t) {
  return t == RowOpType::kDelete || t == RowOpType::kDeleteIgnore;
}

NYALA_EXPORT_END

}  // namespace nyala
