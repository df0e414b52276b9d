// A fast path for the canonical proto3 JSON of the API's own messages, for the Connect door.
//
// Protobuf's JSON utilities convert through the binary form and google.protobuf.Type messages:
// about 70 µs to parse a 20-joint Pose request and 80 µs to print its 240-float answer, most of
// the server's CPU on a JSON call. These two functions walk the message by reflection instead
// (12 µs and 20 µs, bench/json_bench) and cover the plain subset of the mapping that our clients
// send and our answers hold. Anything outside it makes them return false, and the caller uses
// protobuf's converter, so every text is still answered exactly as protobuf answers it (its errors
// included):
// - Print gives byte for byte protobuf's output (compact, lowerCamelCase names, defaults left
//   out, floats as protobuf's SimpleFtoa/SimpleDtoa print them, 64-bit integers quoted). It
//   leaves to protobuf: well-known types, maps, bytes, extensions, unknown fields, enum numbers
//   without a name, strings with characters JSON escapes (or might), and a -0 in a field
//   without presence.
// - Parse accepts what protobuf accepts with the same result, for: objects whose keys are field
//   names (JSON or proto) without escapes, each once; arrays; plain JSON numbers (integer fields
//   take integers only, a float field an integer only where it is exact); integers in quotes for
//   integer fields; true/false; printable ASCII strings without escapes; enum values by name;
//   maps with string keys. Anything else (null, escapes, "NaN", unknown names, well-known types,
//   numbers out of range, text after the value, nesting past 32 levels) returns false with the
//   message cleared.
// tests/server/http/proto_json_test.cc compares both with protobuf's converter on random
// messages of every API type and on mutated texts.
#ifndef SKINNING_SERVER_HTTP_PROTO_JSON_H_
#define SKINNING_SERVER_HTTP_PROTO_JSON_H_

#include <google/protobuf/message.h>

#include <string>

#include "absl/strings/string_view.h"

namespace skinning::proto_json {

// Appends m's canonical JSON to *out and returns true, or returns false (out then holds a partial
// text) when m is outside the subset above.
bool Print(const google::protobuf::Message& m, std::string* out);

// Parses json into m (cleared first) and returns true, or returns false with m cleared when the
// text is outside the subset above.
bool Parse(absl::string_view json, google::protobuf::Message* m);

}  // namespace skinning::proto_json

#endif  // SKINNING_SERVER_HTTP_PROTO_JSON_H_
