// Result<T> is public (nyala/result.h); this adds the tree's short macro for it.
#pragma once

#include <glog/logging.h>

#include "common/status.h"
#include "nyala/result.h"

// Evaluates `expr` (a Result); returns its status if not OK, else assigns the value to `lhs`.
#define ASSIGN_OR_RETURN(lhs, expr) NYALA_ASSIGN_OR_RETURN(lhs, expr)
