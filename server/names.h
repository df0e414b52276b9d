// Resource names of the API, parsed and formatted in this one place:
//   rigs/{rig}                      {rig}     = "rig-" and 32 lower-case hex digits
//   rigs/{rig}/bakes/{bake}         {bake}    = "bake-" and 32 lower-case hex digits
//   rigs/{rig}/examples/{example}   {example} = an example id (CheckNewExampleId)
// Parse errors are INVALID_ARGUMENT naming the request field and the expected pattern.
#ifndef SKINNING_SERVER_NAMES_H_
#define SKINNING_SERVER_NAMES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skinning {

// "rigs/" + rig id, and so on.
std::string RigName(absl::string_view rig_id);
std::string BakeName(absl::string_view rig_id, absl::string_view bake_id);
std::string ExampleName(absl::string_view rig_id, absl::string_view example_id);

// A parsed bake name.
struct BakeRef {
  std::string rig_id;
  std::string bake_id;
  std::string name() const { return BakeName(rig_id, bake_id); }
};

// A parsed example name.
struct ExampleRef {
  std::string rig_id;
  std::string example_id;
  std::string name() const { return ExampleName(rig_id, example_id); }
};

// The rig id of "rigs/{rig}". `field` names the request field in messages, e.g.
// "name 'rigs/x' is not a rig name (expected rigs/rig-<32 hex digits>)".
absl::StatusOr<std::string> ParseRigName(absl::string_view name, absl::string_view field);
absl::StatusOr<BakeRef> ParseBakeName(absl::string_view name, absl::string_view field);
// Accepts the ids of examples stored before ids had a charset (1 to 128 bytes, no control
// characters), so that they can still be read and deleted.
absl::StatusOr<ExampleRef> ParseExampleName(absl::string_view name, absl::string_view field);

// Whether `id` is "rig-" / "bake-" and 32 lower-case hex digits.
bool IsRigId(absl::string_view id);
bool IsBakeId(absl::string_view id);
// INVALID_ARGUMENT naming `field` unless IsRigId(id) (for ids that do not come from a name).
absl::Status CheckRigId(absl::string_view id, absl::string_view field = "rig id");
// The id of a new example: 1 to 63 characters from letters, digits, '-', '_' and '.', starting
// with a letter or digit. INVALID_ARGUMENT naming `field` otherwise.
absl::Status CheckNewExampleId(absl::string_view id, absl::string_view field);

}  // namespace skinning

#endif  // SKINNING_SERVER_NAMES_H_
