// Primary and partition keys of client-side rows.
//
// Stateless functions; thread-safe.
#pragma once

#include <string>

#include "common/key_encoding.h"
#include "nyala/row.h"
#include "nyala/schema.h"

namespace nyala::client::internal {

// The encoded primary key of `row`: InvalidArgument naming the first key column
// that is unset or NULL.
inline Status EncodePrimaryKey(const Schema& schema, const RowView& row, std::string* out) {
  for (int i = 0; i < schema.num_key_columns(); i++) {
    if (!row.cell(i).has_value()) {
      return Status::InvalidArgument("key column '" + schema.column(i).name() + "' not set");
    }
  }
  out->clear();
  EncodeKey(schema, row.cells(), out);
  return Status::OK();
}

}  // namespace nyala::client::internal
