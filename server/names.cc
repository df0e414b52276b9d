#include "server/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace skinning {
namespace {

constexpr char kRigs[] = "rigs/";
constexpr char kBakes[] = "/bakes/";
constexpr char kExamples[] = "/examples/";
constexpr char kRigPattern[] = "rigs/rig-<32 hex digits>";
constexpr char kBakePattern[] = "rigs/rig-<32 hex digits>/bakes/bake-<32 hex digits>";
constexpr char kExamplePattern[] = "rigs/rig-<32 hex digits>/examples/<example id>";
// Ids of examples stored before the charset: what the server accepted then.
constexpr size_t kMaxLegacyExampleIdBytes = 128;
constexpr size_t kMaxExampleIdBytes = 63;

bool IsHexId(absl::string_view id, absl::string_view prefix) {
  if (id.size() != prefix.size() + 32 || !absl::StartsWith(id, prefix)) return false;
  for (char c : id.substr(prefix.size()))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// The start of a possibly long, user-given value, for messages.
std::string Quoted(absl::string_view value) { return absl::StrCat("'", value.substr(0, 96), "'"); }

absl::Status NotA(absl::string_view field, absl::string_view name, absl::string_view what,
                  absl::string_view pattern) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is required (", pattern, ")"));
  return absl::InvalidArgumentError(
      absl::StrCat(field, " ", Quoted(name), " is not ", what, " name (expected ", pattern, ")"));
}

bool IsLegacyExampleId(absl::string_view id) {
  if (id.empty() || id.size() > kMaxLegacyExampleIdBytes) return false;
  for (char c : id) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

// "rigs/{parent}{collection}{child}" → parent and child (child may contain '/').
bool SplitChildName(absl::string_view name, absl::string_view collection, std::string* parent, std::string* child) {
  if (!absl::ConsumePrefix(&name, kRigs)) return false;
  const size_t slash = name.find('/');
  if (slash == absl::string_view::npos) return false;
  *parent = std::string(name.substr(0, slash));
  name.remove_prefix(slash);
  if (!absl::ConsumePrefix(&name, collection)) return false;
  *child = std::string(name);
  return true;
}

}  // namespace

std::string RigName(absl::string_view rig_id) { return absl::StrCat(kRigs, rig_id); }

std::string BakeName(absl::string_view rig_id, absl::string_view bake_id) {
  return absl::StrCat(kRigs, rig_id, kBakes, bake_id);
}

std::string ExampleName(absl::string_view rig_id, absl::string_view example_id) {
  return absl::StrCat(kRigs, rig_id, kExamples, example_id);
}

bool IsRigId(absl::string_view id) { return IsHexId(id, "rig-"); }
bool IsBakeId(absl::string_view id) { return IsHexId(id, "bake-"); }

absl::Status CheckRigId(absl::string_view id, absl::string_view field) {
  if (IsRigId(id)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, " ", Quoted(id), " is malformed (expected rig-<32 hex digits>)"));
}

absl::Status CheckNewExampleId(absl::string_view id, absl::string_view field) {
  bool ok = !id.empty() && id.size() <= kMaxExampleIdBytes && absl::ascii_isalnum(static_cast<unsigned char>(id[0]));
  for (char c : id) ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, " ", Quoted(id),
      " is not an example id (1 to 63 of letters, digits, '-', '_' and '.', starting with a letter or digit)"));
}

absl::StatusOr<std::string> ParseRigName(absl::string_view name, absl::string_view field) {
  absl::string_view id = name;
  if (!absl::ConsumePrefix(&id, kRigs) || !IsRigId(id)) return NotA(field, name, "a rig", kRigPattern);
  return std::string(id);
}

absl::StatusOr<BakeRef> ParseBakeName(absl::string_view name, absl::string_view field) {
  BakeRef ref;
  if (!SplitChildName(name, kBakes, &ref.rig_id, &ref.bake_id) || !IsRigId(ref.rig_id) || !IsBakeId(ref.bake_id))
    return NotA(field, name, "a bake", kBakePattern);
  return ref;
}

absl::StatusOr<ExampleRef> ParseExampleName(absl::string_view name, absl::string_view field) {
  ExampleRef ref;
  if (!SplitChildName(name, kExamples, &ref.rig_id, &ref.example_id) || !IsRigId(ref.rig_id) ||
      !IsLegacyExampleId(ref.example_id))
    return NotA(field, name, "an example", kExamplePattern);
  return ref;
}

}  // namespace skinning
