// The intrinsic table (te/intrinsics.h): lower() rejects undeclared, ill-typed and
// unlowerable calls naming them, and the code generators' lowering tables agree with it.
#include <gtest/gtest.h>
#include <loom/codegen/intrinsics.h>
#include <loom/te/intrinsics.h>

#include <algorithm>
#include <set>

#include "loom/loom.h"

namespace loom {
namespace {

using te::Tensor;
using te::Var;

std::string lower_error(const std::function<te::Expr(const Tensor&, const Var&)>& body, const Target& target = "llvm") {
  Tensor A = te::placeholder({8}, DataType::Float(32), "A");
  Tensor C = te::compute({8}, [&](Var i) { return body(A, i); }, "C");
  Schedule s = create_schedule({C});
  if (target.is_cuda()) {
    auto [bo, bi] = s[C].split(s[C].axis(0), 4);
    s[C].bind(bo, te::thread_axis("blockIdx.x"));
    s[C].bind(bi, te::thread_axis("threadIdx.x"));
  }
  try {
    lower(s, {A, C}, "f", lowering::LowerOptions{.target = target});
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_contains(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected to contain: " << part;
}

TEST(Intrinsics, UnknownIsAnErrorAtLowerNamingStageAndCall) {
  std::string msg = lower_error([](const Tensor& A, const Var& i) { return te::call(DataType::Float(32), "no_such", {A(i)}); });
  expect_contains(msg, "lower 'f': stage 'C': unknown intrinsic 'no_such' in no_such(A[i])");
}

TEST(Intrinsics, ArityAndTypesAreChecked) {
  expect_contains(lower_error([](const Tensor& A, const Var& i) { return te::call(DataType::Float(32), "exp", {A(i), A(i)}); }),
                  "intrinsic 'exp' takes 1 argument(s), got 2");
  expect_contains(lower_error([](const Tensor& A, const Var& i) {
                    return te::call(DataType::Float(32), "exp", {te::cast(DataType::Int(32), A(i))});
                  }),
                  "intrinsic 'exp': argument 0 must be the result's element type, got int32(A[i]) (int32)");
  expect_contains(lower_error([](const Tensor& A, const Var& i) {
                    return te::cast(DataType::Float(32), te::call(DataType::Int(32), "sqrt", {te::cast(DataType::Int(32), A(i))}));
                  }),
                  "intrinsic 'sqrt' returns a float, but the call has type int32");
}

TEST(Intrinsics, ACallNoCodeGeneratorLowersIsNamed) {
  // exp10 is declared (te::evaluate computes it) but neither code generator lowers it.
  expect_contains(lower_error([](const Tensor& A, const Var& i) { return te::call(DataType::Float(32), "exp10", {A(i)}); }),
                  "intrinsic 'exp10' in exp10(A[i]) has no lowering for the llvm code generator (code generators that "
                  "lower it: none");
  // reinterpret has only an LLVM lowering.
  expect_contains(lower_error(
                      [](const Tensor& A, const Var& i) {
                        return te::call(DataType::Float(32), "reinterpret", {te::cast(DataType::Int(32), A(i))});
                      },
                      Target("cuda")),
                  "has no lowering for the cuda code generator (code generators that lower it: llvm)");
  EXPECT_EQ(lower_error([](const Tensor& A, const Var& i) { return te::exp(A(i)) + te::tanh(A(i)); }), "(no error)");
  EXPECT_EQ(lower_error([](const Tensor& A, const Var& i) { return te::exp(A(i)); }, Target("cuda")), "(no error)");
}

TEST(Intrinsics, CodeGeneratorTablesAgreeWithTheDeclarations) {
  const auto check = [](unsigned backend, std::vector<std::string> lowered, const char* what) {
    std::set<std::string> have(lowered.begin(), lowered.end()), declared;
    for (const te::IntrinsicInfo& i : te::intrinsic_table())
      if (i.backends & backend) declared.insert(i.name);
    for (const std::string& n : declared) EXPECT_TRUE(have.count(n)) << what << " does not lower declared '" << n << "'";
    for (const std::string& n : have) {
      EXPECT_TRUE(declared.count(n)) << what << " lowers '" << n << "', which te/intrinsics.cc does not declare for it";
    }
  };
  check(te::kBackendLLVM, codegen::llvm_lowered_intrinsics(), "the LLVM code generator");
  check(te::kBackendCUDA, codegen::cuda_lowered_intrinsics(), "the CUDA code generator");
}

TEST(Intrinsics, DeclarationsAreConsistent) {
  std::set<std::string> names;
  for (const te::IntrinsicInfo& i : te::intrinsic_table()) {
    EXPECT_TRUE(names.insert(i.name).second) << "declared twice: " << i.name;
    EXPECT_TRUE(i.num_args < 0 || size_t(i.num_args) == i.args.size()) << i.name;
    EXPECT_FALSE(i.speculatable && !i.pure) << i.name << ": speculatable but not pure";
    EXPECT_FALSE(i.doc.empty()) << i.name;
    EXPECT_EQ(te::find_intrinsic(i.name), &i);
  }
  EXPECT_EQ(te::find_intrinsic("no_such"), nullptr);
  // What passes rely on.
  EXPECT_TRUE(te::find_intrinsic("likely")->pure);
  EXPECT_FALSE(te::find_intrinsic("loom.dltensor_data")->speculatable);
  EXPECT_FALSE(te::find_intrinsic("loom.dltensor_data")->elementwise);
  EXPECT_FALSE(te::find_intrinsic("loom.sync_threads")->pure);
  EXPECT_TRUE(te::find_intrinsic("exp")->elementwise);
}

}  // namespace
}  // namespace loom
