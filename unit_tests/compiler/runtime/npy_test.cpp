// .npy files: round trips for every supported dtype and clear errors for malformed files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/ir/error.h"
#include "compiler/runtime/npy.h"
#include "unit_tests/compiler/codegen/codegen_test_support.h"

namespace loupe::testing {
namespace {

std::string scratchPath(const std::string& name) {
  std::filesystem::create_directories(testCacheDir());
  return testCacheDir() + "/" + name;
}

// A file with a well-formed v1.0 prefix around `header`, followed by `data`.
std::string writeRaw(const std::string& name, std::string header, const std::string& data) {
  std::string path = scratchPath(name);
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  std::ofstream(path, std::ios::binary) << bytes << header << data;
  return path;
}

void expectNpyError(const std::string& path, const std::string& fragment) {
  try {
    readNpy(path);
    FAIL() << "expected an error mentioning " << fragment;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "npy");
    EXPECT_NE(error.message().find(path), std::string::npos) << error.message();
    EXPECT_NE(error.message().find(fragment), std::string::npos) << error.message();
  }
}

TEST(Npy, RoundTripsEverySupportedDtype) {
  for (DType dtype : {DType::F16, DType::F32, DType::F64, DType::I8, DType::I16, DType::I32,
                      DType::I64, DType::U8, DType::Bool}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3}, {0, 4}}) {
      Tensor original = randomTensor(dtype, shape, 3);
      std::string path = scratchPath("round_trip.npy");
      writeNpy(path, original);
      Tensor back = readNpy(path);
      EXPECT_EQ(back.dtype(), dtype);
      EXPECT_EQ(back.shape(), shape);
      EXPECT_EQ(back.toDoubles(), original.toDoubles()) << dtypeName(dtype);
      std::ifstream in(path, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), {});
      EXPECT_EQ((bytes.size() - original.nbytes()) % 64, 0u) << "header must be 64-byte aligned";
    }
  }
}

TEST(Npy, WritesStridedTensorsInCOrder) {
  Tensor base = Tensor::fromDoubles({1, 2, 3, 4, 5, 6}, DType::F32, {2, 3});
  std::string path = scratchPath("transposed.npy");
  writeNpy(path, base.view({3, 2}, {1, 3}, 0));
  EXPECT_EQ(readNpy(path).toDoubles(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(Npy, ReadsVersionTwoHeaders) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n";
  std::string path = scratchPath("v2.npy");
  std::string bytes = "\x93NUMPY\x02";
  bytes += '\0';
  for (int i = 0; i < 4; ++i)
    bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  int32_t data[2] = {7, -9};
  std::ofstream(path, std::ios::binary)
      << bytes << header << std::string(reinterpret_cast<char*>(data), sizeof data);
  EXPECT_EQ(readNpy(path).toDoubles(), (std::vector<double>{7, -9}));
}

TEST(Npy, MalformedFilesAreClearErrors) {
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  expectNpyError(scratchPath("missing.npy"), "cannot open");
  expectNpyError(writeRaw("short.npy", f4, std::string(7, '\0')), "needs 8");
  expectNpyError(writeRaw("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",
                          std::string(8, '\0')),
                 "fortran_order");
  expectNpyError(writeRaw("complex.npy",
                          "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                          std::string(8, '\0')),
                 "unsupported dtype");
  expectNpyError(writeRaw("big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                          std::string(8, '\0')),
                 "big-endian");
  expectNpyError(
      writeRaw("shape.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }", ""),
      "shape");
  expectNpyError(
      writeRaw("huge.npy",
               "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
               ""),
      "too many elements");
  std::string truncated = writeRaw("truncated.npy", f4, "");
  std::filesystem::resize_file(truncated, 20);
  expectNpyError(truncated, "truncated header");
  std::ofstream(scratchPath("text.npy")) << "hello, world";
  expectNpyError(scratchPath("text.npy"), "bad magic");
}

} // namespace
} // namespace loupe::testing
