// Whether a machine's timings stand for a target: the rule distributed tuning applies per rank.
#include "loom/tuner/machine.h"

#include <gtest/gtest.h>

#include "loom/codegen/check_target.h"

namespace loom::tuner {
namespace {

MachineInfo machine(const std::string& host, const std::string& cpu, const std::string& features) {
  MachineInfo m;
  m.host = host;
  m.cpu_model = "Some CPU";
  m.cpu = cpu;
  m.features = features;
  return m;
}

#define EXPECT_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << "no '" << (needle) << "' in: " << (text)

TEST(MachineTest, WithoutMcpuAMachineMatchesTheReferenceMachinesCpuAndFeatures) {
  MachineInfo ref = machine("head", "skylake-avx512", "+avx2,+avx512f,+fma");
  EXPECT_EQ(measure_mismatch(Target("llvm"), machine("n1", "skylake-avx512", "+avx2,+avx512f,+fma"), ref), "");
  EXPECT_EQ(measure_mismatch(Target("llvm -mcpu=native"), machine("n1", "skylake-avx512", "+avx2,+avx512f,+fma"), ref),
            "");
  // An x86-64 level is not a CPU model either: the reference machine stands for it.
  EXPECT_EQ(measure_mismatch(Target("llvm -mcpu=x86-64-v3"), machine("n1", "skylake-avx512", "+avx2,+avx512f,+fma"),
                             ref),
            "");

  std::string other_cpu = measure_mismatch(Target("llvm"), machine("n2", "znver3", "+avx2,+fma"), ref);
  EXPECT_HAS(other_cpu, "this machine's CPU is 'znver3'");
  EXPECT_HAS(other_cpu, "(head) is 'skylake-avx512'");

  std::string fewer = measure_mismatch(Target("llvm"), machine("n3", "skylake-avx512", "+avx2,+fma,+sse4.2"), ref);
  EXPECT_HAS(fewer, "it lacks +avx512f");
  EXPECT_HAS(fewer, "and also has +sse4.2");
}

TEST(MachineTest, AnMcpuModelMustBeTheMachinesCpu) {
  MachineInfo ref = machine("head", "skylake-avx512", "+avx2,+avx512f");
  EXPECT_EQ(measure_mismatch(Target("llvm -mcpu=znver3"), machine("n1", "znver3", "+avx2"), ref), "");
  std::string why = measure_mismatch(Target("llvm -mcpu=znver3"), ref, ref);
  EXPECT_HAS(why, "names CPU 'znver3', this machine's is 'skylake-avx512'");
}

TEST(MachineTest, CudaTargetsAreNotComparedHere) {
  MachineInfo ref = machine("head", "skylake-avx512", "+avx2");
  EXPECT_EQ(measure_mismatch(Target("cuda"), machine("n1", "znver3", "+avx2"), ref), "");
}

TEST(MachineTest, ThisMachineMatchesItselfAndNotAnotherTriple) {
  MachineInfo me = MachineInfo::local();
  EXPECT_FALSE(me.cpu.empty());
  EXPECT_FALSE(me.features.empty());
  EXPECT_GE(me.cores, 1);
  EXPECT_EQ(me.cpu, codegen::host_cpu().name);
  EXPECT_EQ(local_measure_mismatch(Target("llvm"), me, me), "");
  EXPECT_HAS(local_measure_mismatch(Target("llvm -mtriple=aarch64-linux-gnu"), me, me), "is for triple");
}

}  // namespace
}  // namespace loom::tuner
