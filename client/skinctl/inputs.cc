#include "client/skinctl/inputs.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

using nlohmann::json;

json Parse(absl::string_view text) {
  return json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

// Why `text` is not JSON, in the parser's words ("parse error at line 1, column 27: ... number
// overflow ..."), for a file that did not parse.
std::string ParseError(absl::string_view text) {
  try {
    [[maybe_unused]] const json parsed = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return e.what();
  }
  return "not JSON";
}

// A JSON number as a float: finite and within float's range (a larger one would not convert).
absl::StatusOr<float> AsFloat(const json& v, const std::string& what) {
  if (!v.is_number()) return absl::InvalidArgumentError(absl::StrCat(what, " is not a number"));
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::abs(d) > std::numeric_limits<float>::max())
    return absl::InvalidArgumentError(absl::StrCat(what, " = ", v.dump(), " is not a finite float"));
  return static_cast<float>(d);
}

}  // namespace

absl::StatusOr<Pose> ParsePoseJson(absl::string_view text, const Skeleton& skeleton, const std::string& where) {
  Pose pose = RestPose(skeleton);
  const json doc = Parse(text);
  if (doc.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", ParseError(text)));
  // "joints" may be left out (every joint at rest: a file of morph weights only).
  if (!doc.is_object() || (doc.contains("joints") && !doc["joints"].is_array()))
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a JSON object with a \"joints\" array"));
  int i = 0;
  for (const json& entry : doc.contains("joints") ? doc["joints"] : json::array()) {
    const std::string at = absl::StrFormat("%s: joints[%d]", where, i++);
    if (!entry.is_object()) return absl::InvalidArgumentError(absl::StrCat(at, ": expected an object"));
    int j = -1;
    if (entry.contains("name") && entry["name"].is_string()) {
      j = skeleton.Find(entry["name"].get<std::string>());
      if (j < 0)
        return absl::InvalidArgumentError(absl::StrCat(at, ": no joint named '", entry["name"].get<std::string>(), "'"));
    } else if (entry.contains("index") && entry["index"].is_number_integer()) {
      const int64_t index = entry["index"].get<int64_t>();
      if (index < 0 || index >= skeleton.size())
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: index %d is out of range (%d joints)", at, index, skeleton.size()));
      j = static_cast<int>(index);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(at, ": needs \"name\" or \"index\""));
    }
    auto numbers = [&](const char* key, size_t n, double* out) -> absl::Status {
      if (!entry.contains(key)) return absl::OkStatus();
      const json& a = entry[key];
      if (!a.is_array() || a.size() != n)
        return absl::InvalidArgumentError(absl::StrFormat("%s.%s must be an array of %d numbers", at, key, n));
      for (size_t k = 0; k < n; ++k) {
        if (!a[k].is_number())
          return absl::InvalidArgumentError(absl::StrFormat("%s.%s[%d] is not a number", at, key, k));
        out[k] = a[k].get<double>();
      }
      return absl::OkStatus();
    };
    Transform& t = pose.local[j];
    double q[4] = {t.rotation.x(), t.rotation.y(), t.rotation.z(), t.rotation.w()};
    RETURN_IF_ERROR(numbers("translation", 3, t.translation.data()));
    RETURN_IF_ERROR(numbers("scale", 3, t.scale.data()));
    RETURN_IF_ERROR(numbers("rotation", 4, q));
    t.rotation = Eigen::Quaterniond(q[3], q[0], q[1], q[2]);
    // Checked here, named by the file's entry and the joint (ValidatePose below names the
    // skeleton's index).
    Pose one;
    one.local = {t};
    Skeleton just;
    just.joints = {skeleton.joints[j]};
    if (absl::Status s = ValidatePose(just, one, "x"); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(at, " (joint '", skeleton.joints[j].name, "')",
                                                     absl::StripPrefix(s.message(), "x.joints[0]")));
  }
  RETURN_IF_ERROR(ValidatePose(skeleton, pose, where.c_str()));
  return pose;
}

absl::Status ParsePoseJsonMorphWeights(absl::string_view text, const std::string& where, v1::Pose* pose) {
  const json doc = Parse(text);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("morph_weights")) return absl::OkStatus();
  const json& m = doc["morph_weights"];
  if (m.is_array()) {
    for (size_t t = 0; t < m.size(); ++t) {
      ASSIGN_OR_RETURN(const float w, AsFloat(m[t], absl::StrFormat("%s: morph_weights[%d]", where, t)));
      pose->add_morph_weights(w);
    }
  } else if (m.is_object()) {
    for (const auto& [name, value] : m.items()) {
      ASSIGN_OR_RETURN(const float w, AsFloat(value, absl::StrCat(where, ": morph_weights.", name)));
      (*pose->mutable_named_morph_weights())[name] = w;
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": morph_weights must be an object by target name or an array by index"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SolveRequest> ParseConstraintsJson(absl::string_view text, const Skeleton& skeleton,
                                                      const std::string& where) {
  const json doc = Parse(text);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("constraints") || !doc["constraints"].is_array())
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a JSON object with a \"constraints\" array"));
  v1::SolveRequest req;
  int i = 0;
  for (const json& entry : doc["constraints"]) {
    const std::string at = absl::StrFormat("%s: constraints[%d]", where, i++);
    if (!entry.is_object() || !entry.contains("joint"))
      return absl::InvalidArgumentError(absl::StrCat(at, ": needs \"joint\" (a name or an index)"));
    int64_t j = -1;
    if (entry["joint"].is_string()) j = skeleton.Find(entry["joint"].get<std::string>());
    else if (entry["joint"].is_number_integer()) j = entry["joint"].get<int64_t>();
    if (j < 0 || j >= skeleton.size())
      return absl::InvalidArgumentError(absl::StrCat(at, ": unknown joint ", entry["joint"].dump()));
    auto numbers = [&](const char* key, size_t n, google::protobuf::RepeatedField<float>* out) -> absl::Status {
      const json& a = entry[key];
      if (!a.is_array() || a.size() != n)
        return absl::InvalidArgumentError(absl::StrFormat("%s.%s must be an array of %d numbers", at, key, n));
      for (size_t k = 0; k < n; ++k) {
        ASSIGN_OR_RETURN(const float v, AsFloat(a[k], absl::StrFormat("%s.%s[%d]", at, key, k)));
        out->Add(v);
      }
      return absl::OkStatus();
    };
    v1::HandleConstraint* c = req.add_constraints();
    c->set_joint(static_cast<int>(j));
    if (entry.contains("transform")) {
      c->set_kind(v1::HandleConstraint::KIND_TRANSFORM);
      RETURN_IF_ERROR(numbers("transform", 12, c->mutable_target()));
    } else if (entry.contains("position")) {
      c->set_kind(v1::HandleConstraint::KIND_POSITION);
      RETURN_IF_ERROR(numbers("position", 3, c->mutable_target()));
      if (entry.contains("point")) RETURN_IF_ERROR(numbers("point", 3, c->mutable_point()));
    }
  }
  return req;
}

}  // namespace skinning
