// Helpers for tests of the Raft core and its runtime.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "consensus/raft.pb.h"

namespace nyala::consensus {

// A log entry of `term` at `index`.
inline EntryPB MakeEntry(uint64_t term, uint64_t index, EntryTypePB type = ENTRY_NORMAL,
                         std::string data = "x") {
  EntryPB e;
  e.set_term(term);
  e.set_index(index);
  e.set_type(type);
  e.set_data(std::move(data));
  return e;
}

}  // namespace nyala::consensus
