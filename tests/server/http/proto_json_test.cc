// The Connect door's fast JSON path (server/http/proto_json.h) against protobuf's own converter,
// the reference it must match: on random messages of every type the API's four services take or
// answer, on 100,000 random floats and doubles, and on mutated texts. Wherever the fast path
// answers, protobuf must answer the same (the same bytes printed, the same message parsed); for
// messages and texts in its plain subset, it must answer.
#include "server/http/proto_json.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/fast_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/support/proto_json_oracle.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

bool WellKnown(const google::protobuf::FileDescriptor* file) {
  return file->name().rfind("google/protobuf/", 0) == 0;
}

// Every message type the Connect door reads or writes: the methods' inputs and outputs and all
// they contain.
std::vector<const Descriptor*> ApiMessageTypes() {
  std::vector<const Descriptor*> out;
  std::set<const Descriptor*> seen;
  std::vector<const Descriptor*> todo;
  for (const char* name : {"skinning.v1.RigService", "skinning.v1.PoseService",
                           "skinning.v1.BakeService", "skinning.v1.FastService"}) {
    const auto* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
    for (int m = 0; m < service->method_count(); ++m) {
      todo.push_back(service->method(m)->input_type());
      todo.push_back(service->method(m)->output_type());
    }
  }
  while (!todo.empty()) {
    const Descriptor* d = todo.back();
    todo.pop_back();
    if (!seen.insert(d).second) continue;
    if (!d->options().map_entry()) out.push_back(d);
    for (int i = 0; i < d->field_count(); ++i)
      if (d->field(i)->message_type() != nullptr) todo.push_back(d->field(i)->message_type());
  }
  return out;
}

// Whether the fast path covers every message of type d: no maps, bytes or well-known types in
// it, at any depth.
bool PlainType(const Descriptor* d, std::set<const Descriptor*>* visiting) {
  if (WellKnown(d->file())) return false;
  if (!visiting->insert(d).second) return true;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_map() || f->type() == FieldDescriptor::TYPE_BYTES) return false;
    if (f->enum_type() != nullptr && WellKnown(f->enum_type()->file())) return false;
    if (f->message_type() != nullptr && !PlainType(f->message_type(), visiting)) return false;
  }
  return true;
}

bool PlainType(const Descriptor* d) {
  std::set<const Descriptor*> visiting;
  return PlainType(d, &visiting);
}

// Random messages by reflection. Wild mode sets anything a client or the server could: NaN,
// infinities, -0, subnormals, unknown enum numbers, strings with quotes, escapes and UTF-8, maps,
// bytes, well-known types. Plain mode keeps to what the fast path covers.
class Filler {
 public:
  Filler(uint64_t seed, bool wild) : rng_(seed), wild_(wild) {}

  void Fill(Message* m, int depth) {
    const Descriptor* d = m->GetDescriptor();
    const Reflection* r = m->GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (Uniform(3) == 0) continue;
      if (f->message_type() != nullptr && depth >= 3) continue;
      if (f->is_map()) {
        if (!wild_) continue;
        for (int n = Uniform(3); n > 0; --n) {
          Message* entry = r->AddMessage(m, f);
          SetOne(entry, f->message_type()->map_key(), false, depth + 1);
          SetOne(entry, f->message_type()->map_value(), false, depth + 1);
        }
      } else if (f->is_repeated()) {
        const int n = f->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT ? Uniform(40) : Uniform(4);
        for (int k = 0; k < n; ++k) SetOne(m, f, true, depth);
      } else {
        SetOne(m, f, false, depth);
      }
    }
  }

  float Float() {
    switch (Uniform(wild_ ? 8 : 5)) {
      case 0:
        return static_cast<float>(Uniform(2001)) - 1000;  // integers
      case 1:
        return static_cast<float>(Uniform(100000)) / 1000;  // few digits
      case 2:
        return static_cast<float>(Normal() * 3);  // computed values
      case 3:
        return static_cast<float>(Normal() * std::pow(10.0, Uniform(60) - 30));
      case 4: {  // any normal bit pattern
        float v = 0;
        do {
          const uint32_t bits = static_cast<uint32_t>(rng_());
          std::memcpy(&v, &bits, 4);
        } while (!std::isnormal(v));
        return v;
      }
      case 5: {  // anything, NaN and subnormal included
        const uint32_t bits = static_cast<uint32_t>(rng_());
        float v = 0;
        std::memcpy(&v, &bits, 4);
        return v;
      }
      case 6:
        return Uniform(2)
                   ? -0.0f
                   : std::numeric_limits<float>::denorm_min() * static_cast<float>(Uniform(1000));
      default:
        return Uniform(2) ? std::numeric_limits<float>::infinity() : -FLT_MAX;
    }
  }

  double Double() {
    if (Uniform(3) == 0) return Float();
    if (wild_ && Uniform(4) == 0) {
      const uint64_t bits = rng_();
      double v = 0;
      std::memcpy(&v, &bits, 8);
      return v;
    }
    double v = 0;
    do {
      const uint64_t bits = rng_();
      std::memcpy(&v, &bits, 8);
    } while (!std::isnormal(v));
    return v;
  }

  std::string String() {
    std::string s;
    const int n = Uniform(10);
    for (int i = 0; i < n; ++i) {
      if (wild_ && Uniform(6) == 0) {
        static const char* const kOdd[] = {
            "\"", "\\", "<", ">", "&", "'", "\n", "\x01", "\xc3\xa9", "\xe2\x80\xa8", "\x7f", "="};
        s += kOdd[Uniform(12)];
      } else {
        s.push_back(static_cast<char>(0x20 + Uniform(95)));
        if (!wild_ && (s.back() == '"' || s.back() == '\\' || s.back() == '<' || s.back() == '>' ||
                       s.back() == '&' || s.back() == '\''))
          s.back() = 'x';
      }
    }
    return s;
  }

 private:
  int Uniform(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  double Normal() { return std::normal_distribution<double>()(rng_); }

  void SetOne(Message* m, const FieldDescriptor* f, bool rep, int depth) {
    const Reflection* r = m->GetReflection();
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32: {
        const int32_t v = static_cast<int32_t>(rng_() >> Uniform(64));
        rep ? r->AddInt32(m, f, v) : r->SetInt32(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT32: {
        const uint32_t v = static_cast<uint32_t>(rng_() >> Uniform(64));
        rep ? r->AddUInt32(m, f, v) : r->SetUInt32(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_INT64: {
        const int64_t v = static_cast<int64_t>(rng_()) >> Uniform(64);
        rep ? r->AddInt64(m, f, v) : r->SetInt64(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        const uint64_t v = rng_() >> Uniform(64);
        rep ? r->AddUInt64(m, f, v) : r->SetUInt64(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_FLOAT: {
        float v = Float();
        if (!wild_ && !rep && !f->has_presence() && v == 0) v = 1;
        rep ? r->AddFloat(m, f, v) : r->SetFloat(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_DOUBLE: {
        double v = Double();
        if (!wild_ && !rep && !f->has_presence() && v == 0) v = 1;
        rep ? r->AddDouble(m, f, v) : r->SetDouble(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        const bool v = Uniform(2) == 1;
        rep ? r->AddBool(m, f, v) : r->SetBool(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* e = f->enum_type();
        const int v = wild_ && Uniform(5) == 0 ? 1000 + Uniform(5)
                                               : e->value(Uniform(e->value_count()))->number();
        rep ? r->AddEnumValue(m, f, v) : r->SetEnumValue(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        const std::string v = String();
        rep ? r->AddString(m, f, v) : r->SetString(m, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        Fill(rep ? r->AddMessage(m, f) : r->MutableMessage(m, f), depth + 1);
        break;
    }
  }

  std::mt19937_64 rng_;
  bool wild_;
};

std::unique_ptr<Message> New(const Descriptor* d) {
  return std::unique_ptr<Message>(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(d)->New());
}

// protobuf logs a warning for every message it cannot print (a wild Timestamp); quiet here.
class QuietProtobufLog : public ::testing::Environment {
 public:
  void SetUp() override { google::protobuf::SetLogHandler(nullptr); }
};
const auto* const kQuiet = ::testing::AddGlobalTestEnvironment(new QuietProtobufLog);

std::optional<std::string> ProtobufPrint(const Message& m,
                                         google::protobuf::util::JsonPrintOptions options = {}) {
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out, options).ok()) return std::nullopt;
  return out;
}

// The fast parse of json agrees with protobuf's (tests/support/proto_json_oracle.h). Returns
// whether it answered.
bool ParseAgrees(const Descriptor* d, const std::string& json) {
  const auto verdict = testing::CheckFastJson(*New(d), json);
  EXPECT_EQ(verdict.disagreement, "") << d->full_name() << ": " << json;
  return verdict.answered;
}

TEST(ProtoJsonTest, PrintsProtobufsBytesForEveryApiMessage) {
  const auto types = ApiMessageTypes();
  ASSERT_GT(types.size(), 40u);
  int printed = 0, total = 0, plain_types = 0;
  for (const bool wild : {true, false}) {
    for (size_t t = 0; t < types.size(); ++t) {
      const Descriptor* d = types[t];
      const bool plain = PlainType(d);
      plain_types += plain && !wild;
      Filler filler(t * 7919 + wild, wild);
      for (int i = 0; i < 60; ++i) {
        auto m = New(d);
        filler.Fill(m.get(), 0);
        const auto reference = ProtobufPrint(*m);
        if (!reference)
          continue;  // e.g. a Timestamp out of range: protobuf's error, not ours to print
        ++total;
        std::string fast;
        if (proto_json::Print(*m, &fast)) {
          ++printed;
          ASSERT_EQ(fast, *reference) << d->full_name() << "\n" << m->DebugString();
        } else {
          EXPECT_FALSE(plain && !wild)
              << "a plain message left to protobuf: " << d->full_name() << "\n"
              << m->DebugString();
        }
      }
    }
  }
  EXPECT_GT(plain_types, 20) << "most of the API's types are plain";
  EXPECT_GT(printed, total / 2) << printed << " of " << total;
}

TEST(ProtoJsonTest, PrintsEveryFloatAndDoubleAsProtobufDoes) {
  // One value per message, so a mismatch names its value: any bit pattern, and computed values.
  Filler filler(42, true);
  std::mt19937_64 rng(7);
  v1::Pose pose;
  pose.add_bone_stretch(0);
  v1::DenseWeights dense;
  dense.add_values(0);
  int printed = 0;
  for (int i = 0; i < 100000; ++i) {
    float f = 0;
    if (i % 2 == 0) {
      const uint32_t bits = static_cast<uint32_t>(rng());
      std::memcpy(&f, &bits, 4);
    } else {
      f = filler.Float();
    }
    pose.set_bone_stretch(0, f);
    std::string fast;
    ASSERT_TRUE(proto_json::Print(pose, &fast));
    ASSERT_EQ(fast, ProtobufPrint(pose).value())
        << "float bits " << std::hex << absl::bit_cast<uint32_t>(f);
    if (i % 4 == 0) {
      double x = 0;
      const uint64_t bits = rng();
      std::memcpy(&x, &bits, 8);
      if (i % 8 == 0) x = filler.Double();
      dense.set_values(0, x);
      fast.clear();
      ASSERT_TRUE(proto_json::Print(dense, &fast));
      ASSERT_EQ(fast, ProtobufPrint(dense).value())
          << "double bits " << std::hex << absl::bit_cast<uint64_t>(x);
    }
    ++printed;
  }
  EXPECT_EQ(printed, 100000);

  // Where the nine digits carry into the next power of ten, where the shortest form rounds up to
  // one, and exact ties at the ninth digit (1234567.125 = 9876537 / 8, 1234567.375 = 9876539 / 8).
  std::vector<float> edges = {1234567.125f, -1234567.375f, 8388607.5f, 0.1f, 1.0f / 3};
  for (int k = -40; k <= 38; ++k) {
    float f = static_cast<float>(std::pow(10.0, k));
    for (int i = 0; i < 3; ++i) f = std::nextafter(f, 0.0f);
    for (int i = 0; i < 7; ++i, f = std::nextafter(f, FLT_MAX)) edges.push_back(f);
  }
  for (const float f : edges) {
    pose.set_bone_stretch(0, f);
    std::string fast;
    ASSERT_TRUE(proto_json::Print(pose, &fast));
    EXPECT_EQ(fast, ProtobufPrint(pose).value())
        << "float bits " << std::hex << absl::bit_cast<uint32_t>(f);
  }
}

TEST(ProtoJsonTest, ParsesWhatProtobufParsesToTheSameMessage) {
  const auto types = ApiMessageTypes();
  int parsed = 0, total = 0;
  for (const bool wild : {true, false}) {
    for (size_t t = 0; t < types.size(); ++t) {
      const Descriptor* d = types[t];
      const bool plain = PlainType(d) && !wild;
      Filler filler(t * 104729 + wild, wild);
      for (int i = 0; i < 30; ++i) {
        auto m = New(d);
        filler.Fill(m.get(), 0);
        // The canonical text, proto field names, indented, and with every default written out.
        std::vector<google::protobuf::util::JsonPrintOptions> forms(4);
        forms[1].preserve_proto_field_names = true;
        forms[2].add_whitespace = true;
        forms[3].always_print_primitive_fields = true;
        for (const auto& options : forms) {
          const auto json = ProtobufPrint(*m, options);
          if (!json) continue;
          ++total;
          const bool answered = ParseAgrees(d, *json);
          parsed += answered;
          if (plain) {
            EXPECT_TRUE(answered) << "a plain text left to protobuf: " << *json;
          }
        }
      }
    }
  }
  EXPECT_GT(parsed, total / 2) << parsed << " of " << total;
}

TEST(ProtoJsonTest, MutatedTextsParseAsProtobufParsesThem) {
  // Random edits of valid requests: wherever the fast path still answers, protobuf must answer
  // the same message (and refuse nothing the fast path takes).
  const Descriptor* types[] = {v1::PoseRequest::descriptor(), v1::PoseSessionRequest::descriptor(),
                               v1::CreateRigRequest::descriptor(),
                               v1::StartBakeRequest::descriptor()};
  std::mt19937_64 rng(99);
  const std::string alphabet = "{}[]:,\"-+.0123456789eE \tnultrfasNIy\\_abcxyzAZ";
  int answered = 0, tried = 0;
  for (const Descriptor* d : types) {
    Filler filler(reinterpret_cast<uintptr_t>(d) % 1000, false);
    for (int i = 0; i < 40; ++i) {
      auto m = New(d);
      filler.Fill(m.get(), 0);
      google::protobuf::util::JsonPrintOptions options;
      options.preserve_proto_field_names = i % 2 == 1;
      const auto printed = ProtobufPrint(*m, options);
      if (!printed) continue;  // e.g. a Timestamp out of range
      const std::string& base = *printed;
      for (int k = 0; k < 150; ++k) {
        std::string text = base;
        for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0 && !text.empty(); --edits) {
          const size_t at = rng() % text.size();
          const char c = alphabet[rng() % alphabet.size()];
          switch (rng() % 3) {
            case 0:
              text.erase(at, 1);
              break;
            case 1:
              text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
              break;
            default:
              text[at] = c;
          }
        }
        ++tried;
        answered += ParseAgrees(d, text);
      }
    }
  }
  EXPECT_GT(answered, tried / 20) << "mutations the fast path still took: " << answered << " of "
                                  << tried;
}

TEST(ProtoJsonTest, EdgeCasesAgreeOrAreLeftToProtobuf) {
  const Descriptor* pose = v1::PoseRequest::descriptor();
  // What a browser sends: the fast path answers.
  EXPECT_TRUE(ParseAgrees(
      pose,
      R"({"rig":"rigs/abc","pose":{"joints":[{"rotation":[0,0.5,-0.25,1e-3],"translation":[1,2,3]},{}]},
                                    "deformer":"DEFORMER_DQS","outputs":{"transforms":true,"vertices":false}})"));
  EXPECT_TRUE(ParseAgrees(
      pose,
      R"( { "rig" : "rigs/abc" , "pose" : { "bone_stretch" : [ 1 , 2.5 , -0.0 , 16777216 ] } } )"));
  EXPECT_TRUE(ParseAgrees(pose, R"({"pose":{"namedMorphWeights":{"smile":0.5,"frown":1}}})"));
  EXPECT_TRUE(
      ParseAgrees(v1::PoseSessionRequest::descriptor(), R"({"sequence":"9007199254740993"})"));
  EXPECT_TRUE(ParseAgrees(v1::PoseSessionRequest::descriptor(), R"({"sequence":-12})"));
  // Left to protobuf (it accepts some, refuses others; the door then answers as protobuf does).
  for (const char* text : {R"({"rig":null})",
                           R"({"rig":"rigs\/abc"})",
                           R"({"rig":"r\u00e9"})",
                           "{\"rig\":\"r\xc3\xa9\"}",
                           R"({"pose":{"boneStretch":["NaN"]}})",
                           R"({"pose":{"boneStretch":["1.5"]}})",
                           R"({"pose":{"boneStretch":[16777217]}})",
                           R"({"pose":{"boneStretch":[-0]}})",
                           R"({"pose":{"boneStretch":[1e39]}})",
                           R"({"pose":{"boneStretch":[1e-50]}})",
                           R"({"pose":{"boneStretch":[1e400]}})",
                           R"({"deformer":1})",
                           R"({"deformer":"dqs"})",
                           R"({"rig":"a","rig":"b"})",
                           R"({"rig":"a","Rig":"b"})",
                           R"({"bake":"a","bake":"a"})",
                           R"({"pose":{"bone_stretch":[1],"boneStretch":[2]}})",
                           R"({"pose":{"namedMorphWeights":{"a":1,"a":2}}})",
                           R"({"rig":"a"} x)",
                           R"([])",
                           "",
                           R"({"unknown":1})",
                           R"({"@type":"x"})",
                           R"({"rig":"a",})"}) {
    EXPECT_FALSE(ParseAgrees(pose, text)) << text;
  }
  EXPECT_FALSE(ParseAgrees(v1::PoseSessionRequest::descriptor(), R"({"sequence":1.0})"));
  EXPECT_FALSE(ParseAgrees(v1::PoseSessionRequest::descriptor(), R"({"sequence":"007"})"));
  EXPECT_FALSE(
      ParseAgrees(v1::PoseSessionRequest::descriptor(), R"({"sequence":"18446744073709551616"})"));

  // A decimal just above the midpoint of two floats, whose nearest double is the midpoint itself:
  // read through double (as protobuf does) it rounds to even, read directly it rounds up.
  const float below = 1.0f + std::numeric_limits<float>::epsilon();  // odd last bit
  const double midpoint = (static_cast<double>(below) + std::nextafter(below, 2.0f)) / 2;
  const std::string text = absl::StrCat(
      R"({"pose":{"boneStretch":[)", absl::StrFormat("%.17g", midpoint), "00000000000000000001]}}");
  EXPECT_TRUE(ParseAgrees(pose, text)) << text;

  // A message where a value belongs, and brackets without end.
  EXPECT_FALSE(ParseAgrees(pose, R"({"pose":{"joints":[{"translation":{"x":1}}]}})"));
  v1::PoseRequest request;
  EXPECT_FALSE(proto_json::Parse(std::string(100000, '{'), &request));
}

TEST(ProtoJsonTest, PrintLeavesToProtobufWhatItDoesNotCover) {
  v1::PoseRequest r;
  r.set_rig("rigs/a\"b");
  std::string out;
  EXPECT_FALSE(proto_json::Print(r, &out)) << "a quote in a string";
  r.set_rig("rigs/abc");
  r.set_deformer(static_cast<v1::Deformer>(77));
  out.clear();
  EXPECT_FALSE(proto_json::Print(r, &out)) << "an enum number without a name";
  r.set_deformer(v1::DEFORMER_DQS);
  (*r.mutable_pose()->mutable_named_morph_weights())["smile"] = 1;
  out.clear();
  EXPECT_FALSE(proto_json::Print(r, &out)) << "a map (its order is protobuf's)";
  r.mutable_pose()->clear_named_morph_weights();
  out.clear();
  ASSERT_TRUE(proto_json::Print(r, &out));
  EXPECT_EQ(out, ProtobufPrint(r).value());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
