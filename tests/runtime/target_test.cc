#include "loom/runtime/target.h"

#include <gtest/gtest.h>

#include "loom/runtime/error.h"

using loom::Target;

TEST(Target, ParseKindAndOptions) {
  Target t("llvm -mcpu=x86-64-v3");
  EXPECT_EQ(t.kind(), "llvm");
  EXPECT_TRUE(t.is_cpu());
  EXPECT_FALSE(t.is_cuda());
  EXPECT_EQ(t.mcpu(), "x86-64-v3");
  EXPECT_TRUE(t.has("mcpu"));
  EXPECT_EQ(t.get("mattr", "none"), "none");

  Target c("cuda -arch=sm_90");
  EXPECT_TRUE(c.is_cuda());
  EXPECT_EQ(c.get("arch"), "sm_90");
}

TEST(Target, CanonicalStringSortsOptions) {
  Target a("llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell");
  Target b("llvm   -mcpu=haswell -mtriple=x86_64-unknown-linux-gnu");
  EXPECT_EQ(a.str(), "llvm -mcpu=haswell -mtriple=x86_64-unknown-linux-gnu");
  EXPECT_EQ(a, b);
  EXPECT_EQ(Target("llvm").str(), "llvm");
  EXPECT_EQ(Target(Target("cuda -arch=sm_90").str()), Target("cuda -arch=sm_90"));
  EXPECT_FALSE(Target("llvm") == Target("llvm -mcpu=haswell"));
}

TEST(Target, UnknownKindListsKnownKinds) {
  try {
    Target t("opencl");
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("opencl"), std::string::npos) << msg;
    EXPECT_NE(msg.find("llvm"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
  }
}

TEST(Target, MalformedOptionsThrow) {
  for (const char* s : {"", "   ", "llvm mcpu=haswell", "llvm -mcpu", "llvm -mcpu=", "llvm -=x", "llvm -",
                        "llvm -mcpu=a -mcpu=b", "llvm -arch=sm_80", "cuda -mcpu=haswell", "llvm -x=1"}) {
    EXPECT_THROW(Target t(s), loom::Error) << "'" << s << "'";
  }
  try {
    Target t("llvm -march=x86-64");
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option -march for target kind 'llvm' in \"llvm -march=x86-64\" "
                                         "(its options: -mcpu, -mtriple, -mattr, -vector_math)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(Target("cuda -arch=sm_80 -fast_math=0").get("fast_math"), "0");
}

TEST(Target, HostDefaults) {
  Target h = Target::host();
  EXPECT_EQ(h, Target("llvm"));
  EXPECT_EQ(h.mcpu(), "");
#if defined(__x86_64__) && defined(__linux__)
  EXPECT_EQ(h.mtriple(), "x86_64-unknown-linux-gnu");
  int expect = __builtin_cpu_supports("avx512f") ? 512 : __builtin_cpu_supports("avx2") ? 256
               : __builtin_cpu_supports("avx") ? 256 : 128;
  EXPECT_EQ(h.vector_bits(), expect);
#endif
  EXPECT_EQ(Target("llvm -mtriple=aarch64-linux-gnu").mtriple(), "aarch64-linux-gnu");
}

TEST(Target, VectorBitsTable) {
  EXPECT_EQ(Target("llvm -mcpu=x86-64-v4").vector_bits(), 512);
  EXPECT_EQ(Target("llvm -mcpu=skylake-avx512").vector_bits(), 512);
  EXPECT_EQ(Target("llvm -mcpu=sapphirerapids").vector_bits(), 512);
  EXPECT_EQ(Target("llvm -mcpu=znver4").vector_bits(), 512);
  EXPECT_EQ(Target("llvm -mcpu=x86-64-v3").vector_bits(), 256);
  EXPECT_EQ(Target("llvm -mcpu=haswell").vector_bits(), 256);
  EXPECT_EQ(Target("llvm -mcpu=znver3").vector_bits(), 256);
  EXPECT_EQ(Target("llvm -mcpu=x86-64").vector_bits(), 128);
  EXPECT_EQ(Target("llvm -mcpu=x86-64-v2").vector_bits(), 128);
  EXPECT_EQ(Target("llvm -mtriple=aarch64-linux-gnu").vector_bits(), 128);
  EXPECT_EQ(Target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v1").vector_bits(), 128);
  // Disabling a feature takes those built on it along.
  EXPECT_EQ(Target("llvm -mcpu=x86-64-v4 -mattr=-avx512f").vector_bits(), 256);
  EXPECT_EQ(Target("llvm -mcpu=x86-64-v4 -mattr=-avx").vector_bits(), 128);
  EXPECT_EQ(Target("llvm -mcpu=x86-64-v3 -mattr=-avx2").vector_bits(), 256);
}

TEST(Target, VectorMathOption) {
  EXPECT_EQ(Target("llvm -vector_math=none").get("vector_math"), "none");
  EXPECT_EQ(Target("llvm -vector_math=libmvec").get("vector_math"), "libmvec");
  EXPECT_THROW(Target("llvm -vector_math=svml"), loom::Error);
  EXPECT_THROW(Target("cuda -vector_math=none"), loom::Error);
}
