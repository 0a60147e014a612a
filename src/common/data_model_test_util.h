// Random data for the data-model tests (types, keys, rows, partitions,
// predicates): values that stress the encodings (boundaries, -0.0, +-inf, NaNs,
// strings holding 0x00/0x01/0xff), random schemas and rows. Header-only; include
// only from *-test.cc. Not thread-safe: one generator per thread.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "nyala/arena.h"
#include "nyala/row.h"
#include "nyala/schema.h"
#include "nyala/types.h"

namespace nyala {

class DataGen {
 public:
  explicit DataGen(uint64_t seed) : rng_(seed) {}

  std::mt19937_64& rng() { return rng_; }
  uint64_t Uniform(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool OneIn(uint64_t n) { return Uniform(n) == 0; }

  DataType RandomType() { return static_cast<DataType>(1 + Uniform(kMaxDataType)); }

  // A random value of `type`; strings are copied into `arena`. `small_domain`
  // draws from a handful of values so equal values are frequent.
  Cell RandomValue(DataType type, Arena* arena, bool small_domain = false) {
    switch (type) {
      case DataType::kBool:
        return Cell::Bool(OneIn(2));
      case DataType::kInt8:
      case DataType::kInt16:
      case DataType::kInt32:
      case DataType::kInt64:
      case DataType::kUnixtimeMicros:
        return Cell::Integer(type, RandomInt(type, small_domain));
      case DataType::kFloat:
        return Cell::Float(static_cast<float>(RandomDouble(small_domain, true)));
      case DataType::kDouble:
        return Cell::Double(RandomDouble(small_domain, false));
      case DataType::kString:
      case DataType::kBinary:
        return Cell::VarLen(type, arena->Copy(Slice(RandomBytes(small_domain))));
      case DataType::kUnknown:
        break;
    }
    ADD_FAILURE() << "bad type";
    return Cell();
  }

  int64_t RandomInt(DataType type, bool small_domain) {
    int bits = 64;
    if (type == DataType::kInt8) bits = 8;
    if (type == DataType::kInt16) bits = 16;
    if (type == DataType::kInt32) bits = 32;
    const int64_t max =
        bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    const int64_t min = -max - 1;
    if (small_domain) return static_cast<int64_t>(Uniform(5)) - 2;
    switch (Uniform(8)) {
      case 0: {
        const int64_t specials[] = {min, min + 1, -1, 0, 1, max - 1, max};
        return specials[Uniform(7)];
      }
      case 1:
      case 2:
        return static_cast<int64_t>(Uniform(21)) - 10;
      default: {
        // A random magnitude below 2^b, either sign.
        const int b = 1 + static_cast<int>(Uniform(bits - 1));
        const int64_t v = static_cast<int64_t>(Uniform(uint64_t{1} << b));
        return OneIn(2) ? v : -v - 1;
      }
    }
  }

  double RandomDouble(bool small_domain, bool as_float) {
    const double inf = std::numeric_limits<double>::infinity();
    if (small_domain) {
      const double vals[] = {-1.5, -0.0, 0.0, 2.0, inf, std::nan("")};
      return vals[Uniform(6)];
    }
    switch (Uniform(6)) {
      case 0: {
        const double vals[] = {
            0.0,
            -0.0,
            inf,
            -inf,
            std::nan(""),
            -std::nan(""),
            std::nan("0x12345"),
            as_float ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min(),
            as_float ? -std::numeric_limits<float>::max() : -std::numeric_limits<double>::max(),
            as_float ? std::numeric_limits<float>::denorm_min()
                     : std::numeric_limits<double>::denorm_min(),
            1.0,
            -1.0};
        return vals[Uniform(12)];
      }
      case 1:
        return static_cast<double>(static_cast<int64_t>(Uniform(9)) - 4);
      default: {
        std::uniform_real_distribution<double> mant(-1.0, 1.0);
        return std::ldexp(
            mant(rng_), static_cast<int>(Uniform(as_float ? 200 : 1600)) - (as_float ? 100 : 800));
      }
    }
  }

  std::string RandomBytes(bool small_domain) {
    static const char kAlphabet[] = {'\0', '\1', '\2', 'a', 'b', '\xfe', '\xff'};
    std::string s;
    const size_t len = small_domain ? Uniform(3) : (OneIn(10) ? Uniform(40) : Uniform(6));
    for (size_t i = 0; i < len; i++) {
      s.push_back(small_domain ? "ab\0"[Uniform(3)] : kAlphabet[Uniform(sizeof(kAlphabet))]);
    }
    return s;
  }

  // A schema with 1..max_keys key columns and 0..max_values value columns of
  // random types; value columns randomly nullable and/or with a default.
  Schema RandomSchema(int max_keys = 3, int max_values = 5) {
    std::vector<ColumnSchema> cols;
    const int nk = 1 + static_cast<int>(Uniform(max_keys));
    const int nv = static_cast<int>(Uniform(max_values + 1));
    for (int i = 0; i < nk; i++) {
      cols.emplace_back("k" + std::to_string(i), RandomType());
    }
    for (int i = 0; i < nv; i++) {
      DataType t = RandomType();
      Value def;
      if (OneIn(3)) def = Value(RandomValue(t, &arena_));
      cols.emplace_back("v" + std::to_string(i), t, OneIn(2), def);
    }
    Result<Schema> s = Schema::Create(std::move(cols), nk, static_cast<uint32_t>(Uniform(5)));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }

  // A row with every key column set; each value column set, NULL (if nullable) or,
  // when `allow_unset`, left unset.
  Row RandomRow(const Schema* schema, bool allow_unset, bool small_domain = false) {
    Row row(schema);
    for (int i = 0; i < schema->num_columns(); i++) {
      const ColumnSchema& col = schema->column(i);
      if (!schema->is_key_column(i)) {
        if (allow_unset && OneIn(4)) continue;
        if (col.is_nullable() && OneIn(4)) {
          EXPECT_TRUE(row.SetNull(i).ok());
          continue;
        }
      }
      Arena tmp;
      EXPECT_TRUE(row.SetCopy(i, RandomValue(col.type(), &tmp, small_domain)).ok());
    }
    return row;
  }

 private:
  std::mt19937_64 rng_;
  Arena arena_;
};

// Compares the typed composite keys of two rows of one schema: <0, 0, >0.
inline int CompareKeys(const RowView& a, const RowView& b) {
  for (int i = 0; i < a.schema().num_key_columns(); i++) {
    const int c = a.cell(i).Compare(b.cell(i));
    if (c != 0) return c;
  }
  return 0;
}

inline int Sign(int v) { return (v > 0) - (v < 0); }

}  // namespace nyala
