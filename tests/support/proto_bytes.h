// A message's bytes for comparing two messages exactly: deterministic (maps in key order) and
// bit for bit (a -0 differs from 0, unlike MessageDifferencer's float comparison).
#ifndef SKINNING_TESTS_SUPPORT_PROTO_BYTES_H_
#define SKINNING_TESTS_SUPPORT_PROTO_BYTES_H_

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message.h>

#include <string>

namespace skinning::testing {

inline std::string DeterministicBytes(const google::protobuf::Message& m) {
  m.ByteSizeLong();  // the cached sizes the serialization below uses
  std::string s;
  google::protobuf::io::StringOutputStream stream(&s);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeWithCachedSizes(&coded);
  coded.Trim();
  return s;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_PROTO_BYTES_H_
