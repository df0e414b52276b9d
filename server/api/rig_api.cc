#include "server/api/rig_api.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"
#include "server/convert/gltf_import.h"
#include "server/names.h"
#include "server/pose/psd_models.h"

namespace skinning {
namespace {

constexpr int kDefaultRigPage = 100;
constexpr int kMaxRigPage = 1000;
constexpr double kClipFramesPerSecond = 30;

// ListExamples' page token: "<revision>:<index of the page's first example>".
absl::StatusOr<int> PageStart(const std::string& token, int64_t revision, int count) {
  if (token.empty()) return 0;
  int64_t token_revision = 0;
  int begin = 0;
  const std::vector<std::string> parts = absl::StrSplit(token, ':');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &token_revision) || !absl::SimpleAtoi(parts[1], &begin) ||
      token_revision < 0 || begin < 0 || begin > count)
    return absl::InvalidArgumentError(absl::StrCat("page_token '", token, "' is not one this server gave"));
  if (token_revision != revision)
    return absl::AbortedError(absl::StrFormat(
        "the examples changed since the first page (revision %d, now %d); list again from the first page",
        token_revision, revision));
  return begin;
}

// INVALID_ARGUMENT naming the first clip of a CreateRig request with a rig (`animations`) that the
// rig of `skeleton` and `num_targets` morph targets cannot play (CreateRigRequest says what each
// clip needs: CheckClip, and each pose as PoseFromProto takes it); RESOURCE_EXHAUSTED when they take more than
// `max_bytes` (0: no bound).
absl::Status ValidateClips(const google::protobuf::RepeatedPtrField<v1::AnimationClip>& clips,
                           const Skeleton& skeleton, int num_targets, size_t max_bytes) {
  size_t bytes = 0;
  for (int c = 0; c < clips.size(); ++c) {
    const v1::AnimationClip& clip = clips[c];
    const std::string where = absl::StrFormat("animations[%d]", c);
    if (clip.name().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ".name is empty"));
    RETURN_IF_ERROR(CheckClip(clip, num_targets, where));
    for (int f = 0; f < clip.poses_size(); ++f) {
      const v1::Pose& pose = clip.poses(f);
      const std::string at = absl::StrFormat("%s.poses[%d]", where, f);
      RETURN_IF_ERROR(PoseFromProto(pose, skeleton, at.c_str()).status());
      if (!pose.named_morph_weights().empty() || !pose.bone_twist().empty() || !pose.bone_stretch().empty())
        return absl::InvalidArgumentError(absl::StrCat(at, ": a clip's pose holds joints and morph_weights only"));
    }
    bytes += clip.ByteSizeLong();
  }
  if (max_bytes != 0 && bytes > max_bytes)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "animations take %d bytes; at most %d are stored with a rig (a quarter of the message limit)", bytes,
        max_bytes));
  return absl::OkStatus();
}

}  // namespace

absl::Status RigApi::CreateRig(const CallContext& ctx, const v1::CreateRigRequest& req, v1::CreateRigResponse* resp) {
  if (req.source_case() == v1::CreateRigRequest::SOURCE_NOT_SET)
    return absl::InvalidArgumentError("rig or gltf is required");
  if (req.has_gltf() && !req.animations().empty())  // before the file is read
    return absl::InvalidArgumentError("animations go with rig; with gltf the file's are stored");
  RETURN_IF_ERROR(ctx.StillWanted());
  v1::Rig from_file;
  std::optional<UploadGate::Turn> turn;  // held until the rig from the file is stored
  if (req.has_gltf() && uploads_ != nullptr) {
    ASSIGN_OR_RETURN(UploadGate::Turn t, uploads_->Enter(ctx));
    turn.emplace(std::move(t));
  }
  if (req.has_gltf()) {
    // The limits apply to what the file declares, before it is decompressed or read.
    GltfReadOptions read_options;
    read_options.skip_static_meshes = req.skip_static_meshes();
    if (req.has_scene()) {
      if (req.scene() < 0)
        return absl::InvalidArgumentError(absl::StrFormat("scene is %d; a scene index is 0 or more", req.scene()));
      read_options.scene = req.scene();
    }
    ASSIGN_OR_RETURN(GltfCharacter character,
                     ReadGltfBytes(req.gltf(), "gltf", UploadLimits(rigs_->limits()), read_options));
    GltfImport imported = ImportGltf(std::move(character));
    for (std::string& skipped : imported.skipped_static_meshes) resp->add_skipped_static_meshes(std::move(skipped));
    resp->set_scene(imported.scene);
    if (!req.display_name().empty()) imported.rig.name = req.display_name();
    // A quarter of the answer's limit: the Connect JSON of a clip is about three times its binary.
    ASSIGN_OR_RETURN(std::vector<v1::AnimationClip> clips,
                     SampleClips(imported.animations, imported.rig, kClipFramesPerSecond, max_clip_frames_,
                                 max_response_bytes_ / 4));
    for (v1::AnimationClip& clip : clips) *resp->add_animations() = std::move(clip);
    from_file = RigToProto(imported.rig);
    RETURN_IF_ERROR(ctx.StillWanted());
  } else if (!req.display_name().empty()) {
    return absl::InvalidArgumentError("display_name goes with gltf; a rig carries its own (rig.display_name)");
  } else if (req.skip_static_meshes()) {
    return absl::InvalidArgumentError("skip_static_meshes goes with gltf; a rig has no static meshes to leave out");
  } else if (req.has_scene()) {
    return absl::InvalidArgumentError("scene goes with gltf; a rig has no scenes to choose from");
  } else if (!req.animations().empty()) {  // checked against the rig before anything is stored
    if (animations_ == nullptr) return absl::UnimplementedError("this server stores no animations");
    ASSIGN_OR_RETURN(const Rig rig, RigFromProto(req.rig(), rigs_->limits()));
    RETURN_IF_ERROR(ValidateClips(req.animations(), rig.skeleton, static_cast<int>(rig.morph_targets.size()),
                                  max_response_bytes_ / 4));
  }
  // Checked again between validation, hashing and storing (each linear in the rig's size).
  ASSIGN_OR_RETURN(RegisterResult r, rigs_->Register(req.has_gltf() ? from_file : req.rig(), ctx.tenant(),
                                                     [&ctx] { return ctx.StillWanted(); }));
  *resp->mutable_rig() = std::move(r.summary);
  resp->set_created(r.created);
  // The rig is stored; a failure here leaves it so, and the call's retry stores the clips.
  const auto& clips = req.has_gltf() ? resp->animations() : req.animations();
  if (animations_ != nullptr && !clips.empty())
    RETURN_IF_ERROR(animations_->Add(r.rig_id, ctx.tenant(), {clips.begin(), clips.end()}).status());
  return absl::OkStatus();
}

absl::Status RigApi::GetRig(const CallContext& ctx, const v1::GetRigRequest& req, v1::Rig* resp) {
  ASSIGN_OR_RETURN(const std::string rig_id, ParseRigName(req.name(), "name"));
  if (!v1::RigView_IsValid(req.view()))
    return absl::InvalidArgumentError(absl::StrFormat("view = %d is not a RigView", static_cast<int>(req.view())));
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedRig> rig, rigs_->GetForTenant(rig_id, ctx.tenant()));
  if (req.view() == v1::RIG_VIEW_FULL) *resp = RigToProto(rig->rig);
  resp->MergeFrom(rig->summary);
  return absl::OkStatus();
}

absl::Status RigApi::ListRigs(const CallContext& ctx, const v1::ListRigsRequest& req, v1::ListRigsResponse* resp) {
  if (req.page_size() < 0)
    return absl::InvalidArgumentError(absl::StrFormat("page_size = %d must not be negative", req.page_size()));
  const int page = req.page_size() == 0 ? kDefaultRigPage : std::min(req.page_size(), kMaxRigPage);
  ASSIGN_OR_RETURN(std::vector<v1::Rig> all, rigs_->List(ctx.tenant()));
  // The page token is the last name of the previous page; names are sorted.
  auto it = all.begin();
  if (!req.page_token().empty())
    it = std::upper_bound(all.begin(), all.end(), req.page_token(),
                          [](const std::string& token, const v1::Rig& rig) { return token < rig.name(); });
  for (; it != all.end() && resp->rigs_size() < page; ++it) *resp->add_rigs() = std::move(*it);
  if (it != all.end() && resp->rigs_size() > 0) resp->set_next_page_token(resp->rigs(resp->rigs_size() - 1).name());
  return absl::OkStatus();
}

absl::Status RigApi::DeleteRig(const CallContext& ctx, const v1::DeleteRigRequest& req, google::protobuf::Empty*) {
  ASSIGN_OR_RETURN(const std::string rig_id, ParseRigName(req.name(), "name"));
  ASSIGN_OR_RETURN(const bool deleted, rigs_->Delete(rig_id, ctx.tenant()));
  if (!deleted) return absl::NotFoundError(absl::StrCat("rig '", req.name(), "' not found"));
  // Every tenant's examples and animations, and the bakes, go with the stored rig; while another
  // tenant still owns it, only the caller's examples and animations go (with its ownership).
  ASSIGN_OR_RETURN(const bool still_stored, rigs_->Stored(rig_id));
  if (examples_ != nullptr)
    RETURN_IF_ERROR(still_stored ? examples_->DeleteAll(rig_id, ctx.tenant()) : examples_->DeleteEveryTenant(rig_id));
  if (animations_ != nullptr)
    RETURN_IF_ERROR(still_stored ? animations_->DeleteAll(rig_id, ctx.tenant())
                                 : animations_->DeleteEveryTenant(rig_id));
  if (bakes_ != nullptr && !still_stored) RETURN_IF_ERROR(bakes_->DeleteForRig(rig_id).status());
  return absl::OkStatus();
}

absl::Status RigApi::GetAnimations(const CallContext& ctx, const v1::GetAnimationsRequest& req,
                                   v1::GetAnimationsResponse* resp) {
  if (animations_ == nullptr) return absl::UnimplementedError("this server stores no animations");
  ASSIGN_OR_RETURN(const std::string rig_id, ParseRigName(req.rig(), "rig"));
  // The rig itself, not only the access: an unknown (or deleted) rig is NOT_FOUND.
  RETURN_IF_ERROR(rigs_->GetForTenant(rig_id, ctx.tenant()).status());
  ASSIGN_OR_RETURN(std::vector<v1::AnimationClip> clips, animations_->Get(rig_id, ctx.tenant()));
  for (v1::AnimationClip& clip : clips) *resp->add_animations() = std::move(clip);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const LoadedRig>> RigApi::ExampleRig(const std::string& rig_id,
                                                                    const std::string& tenant) {
  if (examples_ == nullptr) return absl::UnimplementedError("examples are not enabled");
  // The rig itself, not only the access: an unknown (or deleted) rig is NOT_FOUND.
  return rigs_->GetForTenant(rig_id, tenant);
}

absl::Status RigApi::CreateExample(const CallContext& ctx, const v1::CreateExampleRequest& req,
                                   v1::CreateExampleResponse* resp) {
  ASSIGN_OR_RETURN(const std::string rig_id, ParseRigName(req.parent(), "parent"));
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedRig> rig, ExampleRig(rig_id, ctx.tenant()));
  ASSIGN_OR_RETURN(v1::Example example, ResolveExample(*rig, req));
  const LoadedRig& r = *rig;
  ASSIGN_OR_RETURN(const ExampleAdded added,
                   examples_->Add(rig_id, ctx.tenant(), std::move(example),
                                  [&r](const internal::v1::StoredExamples& existing, const v1::Example& e) {
                                    return ValidateNewExample(r, existing, e);
                                  }));
  resp->mutable_example()->set_name(ExampleName(rig_id, added.id));
  resp->set_created(added.created);
  resp->set_example_count(added.example_count);
  return absl::OkStatus();
}

absl::Status RigApi::GetExample(const CallContext& ctx, const v1::GetExampleRequest& req, v1::Example* resp) {
  ASSIGN_OR_RETURN(const ExampleRef ref, ParseExampleName(req.name(), "name"));
  RETURN_IF_ERROR(ExampleRig(ref.rig_id, ctx.tenant()).status());
  ASSIGN_OR_RETURN(const ExampleSet set, examples_->Get(ref.rig_id, ctx.tenant()));
  for (const v1::Example& e : set.stored->examples()) {
    if (e.name() != ref.example_id) continue;
    *resp = e;
    resp->set_name(req.name());
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("example '", req.name(), "' not found"));
}

absl::Status RigApi::ListExamples(const CallContext& ctx, const v1::ListExamplesRequest& req,
                                  v1::ListExamplesResponse* resp) {
  ASSIGN_OR_RETURN(const std::string rig_id, ParseRigName(req.parent(), "parent"));
  if (req.page_size() < 0)
    return absl::InvalidArgumentError(absl::StrFormat("page_size = %d must not be negative", req.page_size()));
  if (!v1::ExampleView_IsValid(req.view()))
    return absl::InvalidArgumentError(
        absl::StrFormat("view = %d is not an ExampleView", static_cast<int>(req.view())));
  RETURN_IF_ERROR(ExampleRig(rig_id, ctx.tenant()).status());
  ASSIGN_OR_RETURN(const ExampleSet set, examples_->Get(rig_id, ctx.tenant()));
  const internal::v1::StoredExamples& stored = *set.stored;
  const int count = stored.examples_size();
  ASSIGN_OR_RETURN(const int begin, PageStart(req.page_token(), stored.revision(), count));
  resp->set_revision(stored.revision());
  resp->set_total_size(count);
  const bool full = req.view() == v1::EXAMPLE_VIEW_FULL;
  // Room for the response's other fields and framing.
  const size_t budget = max_response_bytes_ > 4096 ? max_response_bytes_ - 4096 : max_response_bytes_;
  size_t bytes = 0;
  int end = begin;
  for (; end < count; ++end) {
    if (req.page_size() > 0 && end - begin >= req.page_size()) break;
    const v1::Example& e = stored.examples(end);
    const std::string name = ExampleName(rig_id, e.name());
    const size_t size = (full ? e.ByteSizeLong() : 0) + name.size() + 16;
    if (end > begin && bytes + size > budget) break;
    bytes += size;
    v1::Example* out = resp->add_examples();
    if (full) *out = e;
    out->set_name(name);
  }
  if (end < count) resp->set_next_page_token(absl::StrCat(stored.revision(), ":", end));
  return absl::OkStatus();
}

absl::Status RigApi::DeleteExample(const CallContext& ctx, const v1::DeleteExampleRequest& req,
                                   google::protobuf::Empty*) {
  ASSIGN_OR_RETURN(const ExampleRef ref, ParseExampleName(req.name(), "name"));
  RETURN_IF_ERROR(ExampleRig(ref.rig_id, ctx.tenant()).status());
  return examples_->Remove(ref.rig_id, ctx.tenant(), ref.example_id).status();
}

}  // namespace skinning
