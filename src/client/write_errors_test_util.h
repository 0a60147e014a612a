// A check shared by the client's unit test and its integration test: the rows tagged
// with even input lines were duplicates.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "nyala/client.h"

namespace nyala::client {

// After a flush of rows tagged with lines 1..20 whose key is `base + line - 2`, where
// the rows of even lines already existed: checks that the session's errors are
// AlreadyPresent for exactly those ten rows, each carrying its own line's tag and key,
// and that the counts say 10 succeeded and 10 failed. Returns the counts.
inline Session::WriteCounts ExpectDuplicatesAtEvenLines(Session* session, int64_t base) {
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflowed = true;
  session->GetPendingErrors(&errors, &overflowed);
  EXPECT_FALSE(overflowed);
  std::vector<int64_t> lines;
  for (const auto& e : errors) {
    EXPECT_TRUE(e->status().IsAlreadyPresent()) << e->status().ToString();
    const int64_t line = e->failed_op().tag();
    EXPECT_EQ(e->failed_op().row().cell(0).int_value(), base + line - 2) << "line " << line;
    lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<int64_t>{2, 4, 6, 8, 10, 12, 14, 16, 18, 20}));
  const Session::WriteCounts counts = session->GetWriteCounts();
  EXPECT_EQ(counts.succeeded, 10);
  EXPECT_EQ(counts.failed, 10);
  EXPECT_EQ(counts.timed_out, 0);
  return counts;
}

}  // namespace nyala::client
