// gemm-client's options for the whole GEMM (gemm.v1's types, layouts,
// alpha/beta/C and batch), shared by run, bench and upload.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "gemm/form.h"
#include "gemm/v1/gemm.pb.h"

namespace gemmc {

struct FormArgs {
  std::string type = "fp16";  // A and B
  std::string b_type;         // B, where it differs (fp8 pairs)
  std::string d_type, c_type;
  std::string a_layout = "mxk", b_layout = "nxk";
  std::optional<double> alpha;
  double beta = 0;
  uint32_t batch = 0;  // 0: one GEMM
  std::optional<int64_t> stride_a, stride_b, stride_c;
  std::optional<double> a_scale, b_scale;
  bool tf32 = false;
  // C's source when beta is not 0: a raw file, a stored matrix, else
  // generated on the server.
  std::string c_file, c_handle;
};

// Adds --type, --b-type, --d-type, --c-type, --a-layout, --b-layout,
// --alpha, --beta, --batch, --stride-a/b/c, --a-scale, --b-scale, --tf32,
// and (with_c) --c and --c-handle.
void AddFormOptions(CLI::App* app, FormArgs* args, bool with_c);

// "fp16" ... "fp8_e5m2" -> the proto's type; false for anything else.
bool ParseElementType(const std::string& name, gemm::v1::ElementType* type);

gemm::v1::ElementType ToProtoType(gemm::ElementType type);
// "fp16" for ELEMENT_TYPE_UNSPECIFIED, as the server reads it.
const char* TypeName(gemm::v1::ElementType type);

// Sets `req`'s form fields (its shape already set) and resolves them as the
// server will, into *form. "" or what is wrong, for a person. fp8 operands
// get a scale of 1 where none is given.
std::string ApplyForm(const FormArgs& args, gemm::v1::MultiplyRequest* req, gemm::GemmForm* form);

// `count` elements of `type`: the values the server generates from `seed`
// for `operand` (gemm/element_type.h), little-endian.
std::string GeneratedBytes(gemm::ElementType type, uint64_t count, uint64_t seed, gemm::OperandId operand);

}  // namespace gemmc
