#include "loom/runtime/data_type.h"

#include <gtest/gtest.h>

#include "loom/runtime/error.h"

using loom::DataType;

TEST(DataType, ParseAndPrintRoundTrip) {
  for (const char* s : {"float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                        "uint32", "uint64", "bool", "float32x8", "int8x16", "boolx4", "handle"}) {
    EXPECT_EQ(DataType::parse(s).str(), s);
  }
}

TEST(DataType, ParseFields) {
  EXPECT_EQ(DataType::parse("float32"), DataType::Float(32));
  EXPECT_EQ(DataType::parse("int8"), DataType::Int(8));
  EXPECT_EQ(DataType::parse("uint8"), DataType::UInt(8));
  EXPECT_EQ(DataType::parse("int64"), DataType::Int(64));
  EXPECT_EQ(DataType::parse("bool"), DataType::Bool());
  EXPECT_EQ(DataType::parse("float16"), DataType::Float(16));
  EXPECT_EQ(DataType::parse("handle"), DataType::Handle());
  DataType v = DataType::parse("float32x8");
  EXPECT_TRUE(v.is_float());
  EXPECT_EQ(v.bits(), 32);
  EXPECT_EQ(v.lanes(), 8);
  EXPECT_EQ(v.element_of(), DataType::Float(32));
  EXPECT_EQ(DataType::Bool().bytes(), 1);
  EXPECT_EQ(DataType::Float(16).bytes(), 2);
}

TEST(DataType, BadStringsThrow) {
  for (const char* s : {"", "float", "float33", "float8", "int7", "int", "uint", "double", "f32", "float32x",
                        "float32x0", "float32x-1", "int32 ", "Float32", "int3a", "boolx"}) {
    EXPECT_THROW(DataType::parse(s), loom::Error) << "'" << s << "'";
  }
}

TEST(DataType, ErrorMessageNamesTheInput) {
  try {
    DataType::parse("floot32");
    FAIL() << "expected loom::Error";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("floot32"), std::string::npos);
  }
}

TEST(DataType, DLPackRoundTrip) {
  DataType t = DataType::Float(32, 4);
  DLDataType d = t.to_dlpack();
  EXPECT_EQ(d.code, kDLFloat);
  EXPECT_EQ(d.bits, 32);
  EXPECT_EQ(d.lanes, 4);
  EXPECT_EQ(DataType(d), t);
}
