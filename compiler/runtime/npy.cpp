#include "compiler/runtime/npy.h"

#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "compiler/ir/error.h"

namespace loupe {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyType {
  const char* code; // without the byte-order character
  DType dtype;
};
constexpr std::array<NpyType, 9> kTypes{{{"f2", DType::F16},
                                         {"f4", DType::F32},
                                         {"f8", DType::F64},
                                         {"i1", DType::I8},
                                         {"i2", DType::I16},
                                         {"i4", DType::I32},
                                         {"i8", DType::I64},
                                         {"u1", DType::U8},
                                         {"b1", DType::Bool}}};

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw Error("npy", path + ": " + problem, ErrorContext{.file = path});
}

// The text after `'key':` in the header dict, with leading spaces skipped.
size_t valueStart(const std::string& header, const std::string& key, const std::string& path) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(path, "header has no '" + key + "' entry");
  at = header.find(':', at);
  if (at == std::string::npos) fail(path, "header entry '" + key + "' has no value");
  return header.find_first_not_of(' ', at + 1);
}

DType parseDescr(const std::string& header, const std::string& path) {
  size_t at = valueStart(header, "descr", path);
  if (at == std::string::npos || header[at] != '\'') fail(path, "descr is not a string");
  size_t end = header.find('\'', at + 1);
  if (end == std::string::npos) fail(path, "descr is not a closed string");
  std::string descr = header.substr(at + 1, end - at - 1);
  if (descr.size() != 3) fail(path, "unsupported dtype '" + descr + "'");
  for (const NpyType& type : kTypes) {
    if (descr.substr(1) != type.code) continue;
    bool single = dtypeSize(type.dtype) == 1;
    if (descr[0] == '<' || descr[0] == '=' || (single && descr[0] == '|')) return type.dtype;
    fail(path, "dtype '" + descr + "' is big-endian; only little-endian files are supported");
  }
  fail(path, "unsupported dtype '" + descr + "' (supported: f2 f4 f8 i1 i2 i4 i8 u1 b1)");
}

std::vector<int64_t> parseShape(const std::string& header, const std::string& path) {
  size_t at = valueStart(header, "shape", path);
  if (at == std::string::npos || header[at] != '(') fail(path, "shape is not a tuple");
  size_t end = header.find(')', at);
  if (end == std::string::npos) fail(path, "shape is not a closed tuple");
  std::vector<int64_t> shape;
  const int64_t limit = std::numeric_limits<int64_t>::max() / 16;
  int64_t count = 1;
  for (size_t i = at + 1; i < end;) {
    if (header[i] == ' ' || header[i] == ',') {
      ++i;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(header[i])))
      fail(path, "shape holds '" + header.substr(at, end - at + 1) + "', not sizes");
    int64_t size = 0;
    for (; i < end && std::isdigit(static_cast<unsigned char>(header[i])); ++i) {
      size = size * 10 + (header[i] - '0');
      if (size > limit) fail(path, "shape size is too large");
    }
    if (size != 0 && count > limit / size) fail(path, "shape has too many elements");
    count *= size;
    shape.push_back(size);
  }
  return shape;
}

} // namespace

Tensor readNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open the file");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic) != 0)
    fail(path, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(bytes[6]);
  size_t lengthBytes = major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
  if (lengthBytes == 0) fail(path, "unsupported .npy version " + std::to_string(major));
  size_t prefix = 8 + lengthBytes;
  if (bytes.size() < prefix) fail(path, "truncated header");
  size_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerLength |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  if (bytes.size() - prefix < headerLength) fail(path, "truncated header");
  std::string header = bytes.substr(prefix, headerLength);

  DType dtype = parseDescr(header, path);
  size_t order = valueStart(header, "fortran_order", path);
  if (order == std::string::npos) fail(path, "fortran_order has no value");
  if (header.compare(order, 4, "True") == 0)
    fail(path, "fortran_order is True; only C-order arrays are supported (np.ascontiguousarray)");
  if (header.compare(order, 5, "False") != 0) fail(path, "fortran_order is neither True nor False");
  std::vector<int64_t> shape = parseShape(header, path);

  Tensor tensor = Tensor::empty(dtype, shape);
  size_t data = prefix + headerLength;
  if (bytes.size() - data != tensor.nbytes())
    fail(path, "holds " + std::to_string(bytes.size() - data) + " bytes of data, shape " +
                   tensor.describe() + " needs " + std::to_string(tensor.nbytes()));
  std::memcpy(tensor.data(), bytes.data() + data, tensor.nbytes());
  if (dtype == DType::Bool)
    for (int64_t i = 0; i < tensor.numel(); ++i)
      if (tensor.dataAs<uint8_t>()[i] > 1) fail(path, "a bool element is neither 0 nor 1");
  return tensor;
}

void writeNpy(const std::string& path, const Tensor& tensor) {
  const NpyType* type = nullptr;
  for (const NpyType& candidate : kTypes)
    if (candidate.dtype == tensor.dtype()) type = &candidate;
  if (!type)
    fail(path, "dtype " + std::string(dtypeName(tensor.dtype())) + " has no .npy equivalent");
  std::string shape; // Python's tuple spelling: (), (2,), (2, 3)
  for (size_t d = 0; d < tensor.rank(); ++d)
    shape += (d ? ", " : "") + std::to_string(tensor.size(d));
  if (tensor.rank() == 1) shape += ",";
  std::string header = std::string("{'descr': '") + (dtypeSize(tensor.dtype()) == 1 ? "|" : "<") +
                       type->code + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  bool version2 = header.size() + 11 > 65535;
  size_t prefix = version2 ? 12 : 10;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(version2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  Tensor packed = tensor.contiguous();
  out.append(static_cast<const char*>(packed.data()), packed.nbytes());

  std::ofstream file(path, std::ios::binary);
  file.write(out.data(), static_cast<std::streamsize>(out.size()));
  if (!file) fail(path, "cannot write the file");
}

} // namespace loupe
