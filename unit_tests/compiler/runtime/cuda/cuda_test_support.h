// Skipping GPU tests where there is no usable device, and the behaviour-without-driver tests where
// there is one: each says why.
#pragma once

#include "compiler/runtime/cuda/cuda_driver.h"

#include <gtest/gtest.h>

#define LOUPE_REQUIRE_CUDA_DEVICE()                                                                \
  do {                                                                                             \
    std::string why_;                                                                              \
    if (!::loupe::cudaDriverAvailable(&why_)) GTEST_SKIP() << why_;                                \
  } while (0)

#define LOUPE_REQUIRE_NO_CUDA_DRIVER()                                                             \
  do {                                                                                             \
    if (::loupe::cudaDriverAvailable(nullptr))                                                     \
      GTEST_SKIP() << "a CUDA device is present: the behaviour without one cannot be shown";       \
  } while (0)
