#include "server/bake_jobs.h"

#include <openssl/sha.h>

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "core/rig/bones.h"
#include "core/weights/bake.h"
#include "server/convert/convert.h"
#include "skinning/v1/store.pb.h"

namespace skinning {
namespace {

using Clock = std::chrono::steady_clock;

std::string BakeKey(const std::string& id) { return absl::StrCat("bakes/", id, ".pb"); }

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Terminal(v1::BakeState s) {
  return s == v1::BAKE_STATE_DONE || s == v1::BAKE_STATE_FAILED || s == v1::BAKE_STATE_CANCELLED;
}

const char* StateName(v1::BakeState s) {
  switch (s) {
    case v1::BAKE_STATE_QUEUED:
      return "QUEUED";
    case v1::BAKE_STATE_RUNNING:
      return "RUNNING";
    case v1::BAKE_STATE_DONE:
      return "DONE";
    case v1::BAKE_STATE_FAILED:
      return "FAILED";
    case v1::BAKE_STATE_CANCELLED:
      return "CANCELLED";
    default:
      return "UNSPECIFIED";
  }
}

// Core options from normalized wire options.
absl::StatusOr<BakeOptions> ToCoreOptions(const v1::BakeOptions& o, int num_vertices) {
  BakeOptions b;
  switch (o.method()) {
    case v1::BAKE_METHOD_BONE_HEAT:
      b.method = BakeMethod::kBoneHeat;
      break;
    case v1::BAKE_METHOD_GEODESIC_VOXEL:
      b.method = BakeMethod::kGeodesicVoxel;
      break;
    case v1::BAKE_METHOD_FAST_MODEL:
      b.method = BakeMethod::kFastModel;
      break;
    case v1::BAKE_METHOD_SWING_TWIST:
      b.method = BakeMethod::kSwingTwist;
      break;
    case v1::BAKE_METHOD_ENDPOINT:
      b.method = BakeMethod::kEndpoint;
      break;
    case v1::BAKE_METHOD_ELASTIC_MODEL:
      b.method = BakeMethod::kElasticModel;
      break;
    default:
      b.method = BakeMethod::kBbw;
  }
  b.influences = static_cast<int>(o.influences());
  if (o.voxel_resolution() > 0) b.domain.voxel.resolution = static_cast<int>(o.voxel_resolution());
  b.geodesic.falloff = o.geodesic_falloff();
  b.bone_heat.heat_coefficient = o.bone_heat_coefficient();
  b.emw.max_iterations = static_cast<int>(o.swing_twist().max_iterations());
  b.endpoint_method =
      o.endpoint().method() == v1::ENDPOINT_PROJECTION ? EndpointMethod::kProjection : EndpointMethod::kJointBbw;
  b.fast.energy = o.fast().energy() == v1::FAST_ENERGY_VOLUMETRIC ? FastEnergy::kVolumetric : FastEnergy::kSurface;
  b.fast.clusters = static_cast<int>(o.fast().clusters());
  b.fast.extra_weights = static_cast<int>(o.fast().extra_weights());
  if (o.has_tet_mesh()) {
    const v1::TetMesh& t = o.tet_mesh();
    const int nv = t.positions_size() / 3, nt = t.tets_size() / 4;
    TetDomainInput in;
    in.TV.resize(nv, 3);
    for (int i = 0; i < 3 * nv; ++i) in.TV.data()[i] = t.positions(i);
    if (!in.TV.allFinite()) return absl::InvalidArgumentError("options.tet_mesh.positions has a non-finite value");
    in.TT.resize(nt, 4);
    for (int i = 0; i < 4 * nt; ++i) {
      if (t.tets(i) >= static_cast<uint32_t>(nv))
        return absl::InvalidArgumentError(absl::StrFormat(
            "options.tet_mesh.tets[%d][%d] = %u is out of range (%d vertices)", i / 4, i % 4, t.tets(i), nv));
      in.TT.data()[i] = static_cast<int32_t>(t.tets(i));
    }
    b.domain.tet_mesh = std::move(in);
  }
  (void)num_vertices;
  return b;
}

absl::StatusOr<Eigen::MatrixXd> DenseFromProto(const v1::DenseWeights& d, int nv, int nj, const std::string& bake_id,
                                               const char* what) {
  if (static_cast<int>(d.num_joints()) != nj || d.values_size() != nv * nj)
    return absl::DataLossError(absl::StrFormat("stored bake '%s' has %d %s values for %d joints, expected %d x %d",
                                               bake_id, d.values_size(), what, d.num_joints(), nv, nj));
  Eigen::MatrixXd D(nv, nj);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nj; ++j) D(i, j) = d.values(i * nj + j);
  if (!D.allFinite()) return absl::DataLossError(absl::StrFormat("stored bake '%s': non-finite %s", bake_id, what));
  return D;
}

v1::BakeReport ReportToProto(const BakeReport& r) {
  v1::BakeReport report;
  report.set_method(r.method);
  report.set_domain(r.domain);
  report.set_domain_nodes(r.domain_nodes);
  report.set_domain_seconds(r.domain_seconds);
  report.set_solve_seconds(r.solve_seconds);
  report.set_total_seconds(r.total_seconds);
  report.set_detail(r.detail);
  return report;
}

// The weights bake a bake builds on (FAST models, endpoint weights), or "".
const std::string& WeightsSource(const v1::BakeOptions& o) {
  static const std::string kNone;
  if (o.method() == v1::BAKE_METHOD_FAST_MODEL) return o.fast().weights_bake_id();
  if (o.method() == v1::BAKE_METHOD_ENDPOINT) return o.endpoint().weights_bake_id();
  return kNone;
}

// Rough resident size of an elastic model: nodes, the factor, elements.
size_t ElasticModelBytes(const ElasticModel& m) {
  const VolumeDomain& d = m.domain();
  return static_cast<size_t>(d.num_nodes()) * 600 + static_cast<size_t>(d.elements.size()) * 16 +
         static_cast<size_t>(d.to_mesh.nonZeros()) * 12;
}

}  // namespace

struct BakeJobs::Job {
  std::string bake_id;
  std::string rig_id;
  v1::BakeOptions options;
  v1::BakeState state = v1::BAKE_STATE_QUEUED;
  std::string stage = "queued";
  double fraction = 0.0;
  Clock::time_point queued_at = Clock::now(), started_at, finished_at;
  std::atomic<bool> cancel{false};
  absl::Status error;
  v1::BakeReport report;
};

BakeJobs::BakeJobs(RigStore* rigs, std::shared_ptr<BlobStore> blobs, BakeJobsOptions options,
                   BakeObserver* observer)
    : rigs_(rigs), blobs_(std::move(blobs)), options_(options), observer_(observer), cache_(options.cache_bytes) {
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

BakeJobs::~BakeJobs() { Shutdown(); }

void BakeJobs::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    for (auto& job : queue_) {
      SetStateLocked(*job, v1::BAKE_STATE_CANCELLED);
      job->stage = "server shutting down";
    }
    queue_.clear();
    for (auto& [id, job] : jobs_) job->cancel = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
}

std::string BakeJobs::BakeId(const std::string& rig_id, const v1::BakeOptions& normalized) {
  std::string bytes = rig_id + "\n";
  {
    google::protobuf::io::StringOutputStream sos(&bytes);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    normalized.SerializeToCodedStream(&cos);
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return "bake-" + absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), 16));
}

absl::Status BakeJobs::CheckBakeId(const std::string& id) {
  bool ok = id.size() == 37 && absl::StartsWith(id, "bake-");
  for (size_t i = 5; ok && i < id.size(); ++i) ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
  if (!ok)
    return absl::InvalidArgumentError(
        absl::StrCat("bake_id '", id.substr(0, 64), "' is malformed (expected bake- and 32 hex digits)"));
  return absl::OkStatus();
}

absl::StatusOr<v1::BakeOptions> BakeJobs::NormalizeOptions(const v1::BakeOptions& in) {
  v1::BakeOptions o = in;
  if (!v1::BakeMethod_IsValid(o.method()))
    return absl::InvalidArgumentError(absl::StrFormat("options.method = %d is not a bake method", o.method()));
  if (o.method() == v1::BAKE_METHOD_UNSPECIFIED) o.set_method(v1::BAKE_METHOD_BBW);
  if (o.influences() == 0 && o.method() != v1::BAKE_METHOD_FAST_MODEL) o.set_influences(4);
  if (o.influences() > static_cast<uint32_t>(BakeOptions::kMaxInfluences))
    return absl::InvalidArgumentError(absl::StrFormat("options.influences = %u is over the limit (%d)",
                                                      o.influences(), BakeOptions::kMaxInfluences));
  const bool fast = o.method() == v1::BAKE_METHOD_FAST_MODEL;
  const v1::BakeMethod m = o.method();
  if (m == v1::BAKE_METHOD_ENDPOINT) {
    if (!v1::EndpointMethod_IsValid(o.endpoint().method()))
      return absl::InvalidArgumentError(
          absl::StrFormat("options.endpoint.method = %d is not an endpoint method", o.endpoint().method()));
    if (!o.endpoint().weights_bake_id().empty())
      if (auto s = CheckBakeId(o.endpoint().weights_bake_id()); !s.ok())
        return absl::InvalidArgumentError(absl::StrCat("options.endpoint.weights_bake_id: ", s.message()));
  } else {
    o.clear_endpoint();
  }
  if (m == v1::BAKE_METHOD_SWING_TWIST) {
    if (o.swing_twist().max_iterations() == 0) o.mutable_swing_twist()->set_max_iterations(EmwOptions().max_iterations);
    if (o.swing_twist().max_iterations() > 500)
      return absl::InvalidArgumentError(absl::StrFormat("options.swing_twist.max_iterations = %u is over the limit (500)",
                                                        o.swing_twist().max_iterations()));
  } else {
    o.clear_swing_twist();
  }
  if (m == v1::BAKE_METHOD_ELASTIC_MODEL) o.set_influences(0);
  if (fast) {
    const auto& f = o.fast();
    if (!v1::FastEnergy_IsValid(f.energy()))
      return absl::InvalidArgumentError(absl::StrFormat("options.fast.energy = %d is not an energy", f.energy()));
    if (f.clusters() > 4096)
      return absl::InvalidArgumentError(absl::StrFormat("options.fast.clusters = %u is over the limit (4096)", f.clusters()));
    if (f.extra_weights() > 256)
      return absl::InvalidArgumentError(absl::StrFormat("options.fast.extra_weights = %u is over the limit (256)", f.extra_weights()));
    if (!f.weights_bake_id().empty())
      if (auto s = CheckBakeId(f.weights_bake_id()); !s.ok())
        return absl::InvalidArgumentError(absl::StrCat("options.fast.weights_bake_id: ", s.message()));
    o.set_influences(0);
  } else {
    o.clear_fast();
  }
  bool volumetric = true;
  if (fast) volumetric = o.fast().energy() == v1::FAST_ENERGY_VOLUMETRIC;
  if (m == v1::BAKE_METHOD_BONE_HEAT) volumetric = false;
  if (m == v1::BAKE_METHOD_ENDPOINT) volumetric = o.endpoint().method() == v1::ENDPOINT_JOINT_BBW;
  if (fast && !volumetric && o.has_tet_mesh())
    return absl::InvalidArgumentError("options.tet_mesh: the surface FAST energy takes no tet mesh");
  if (m == v1::BAKE_METHOD_BONE_HEAT && o.has_tet_mesh())
    return absl::InvalidArgumentError("options.tet_mesh: bone heat works on the surface and takes no tet mesh");
  if (m == v1::BAKE_METHOD_ENDPOINT && !volumetric && o.has_tet_mesh())
    return absl::InvalidArgumentError("options.tet_mesh: projected endpoint weights need no volume and take no tet mesh");
  if (volumetric && !o.has_tet_mesh()) {
    if (o.voxel_resolution() == 0) o.set_voxel_resolution(VoxelGridOptions().resolution);
    if (o.voxel_resolution() < static_cast<uint32_t>(VoxelGridOptions::kMinResolution) ||
        o.voxel_resolution() > static_cast<uint32_t>(VoxelGridOptions::kMaxResolution))
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.voxel_resolution = %u is outside the limits [%d, %d]", o.voxel_resolution(),
          VoxelGridOptions::kMinResolution, VoxelGridOptions::kMaxResolution));
  } else {
    o.set_voxel_resolution(0);
  }
  if (o.has_tet_mesh()) {
    const auto& t = o.tet_mesh();
    if (t.positions_size() % 3 != 0 || t.tets_size() % 4 != 0 || t.tets_size() == 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.tet_mesh has %d positions and %d tet indices (need multiples of 3 and 4, some tets)",
          t.positions_size(), t.tets_size()));
  }
  if (o.method() == v1::BAKE_METHOD_GEODESIC_VOXEL) {
    if (o.geodesic_falloff() == 0) o.set_geodesic_falloff(GeodesicWeightsOptions().falloff);
    if (!(o.geodesic_falloff() > 0 && o.geodesic_falloff() <= 16))
      return absl::InvalidArgumentError(
          absl::StrFormat("options.geodesic_falloff = %g must be in (0, 16]", o.geodesic_falloff()));
  } else {
    o.set_geodesic_falloff(0);
  }
  if (o.method() == v1::BAKE_METHOD_BONE_HEAT) {
    if (o.bone_heat_coefficient() == 0) o.set_bone_heat_coefficient(BoneHeatOptions().heat_coefficient);
    if (!(o.bone_heat_coefficient() > 0 && o.bone_heat_coefficient() < 1e6))
      return absl::InvalidArgumentError(absl::StrFormat("options.bone_heat_coefficient = %g must be positive",
                                                        o.bone_heat_coefficient()));
  } else {
    o.set_bone_heat_coefficient(0);
  }
  return o;
}

void BakeJobs::SetStateLocked(Job& job, v1::BakeState state) {
  if (observer_ != nullptr) {
    BakeTransition t;
    t.method = job.options.method();
    t.from = job.state;
    t.to = state;
    if (job.state == v1::BAKE_STATE_RUNNING && Terminal(state))
      t.run_seconds = std::chrono::duration<double>(Clock::now() - job.started_at).count();
    observer_->OnBakeTransition(t);
  }
  job.state = state;
}

v1::BakeStatus BakeJobs::StatusLocked(const Job& job) const {
  v1::BakeStatus s;
  s.set_bake_id(job.bake_id);
  s.set_rig_id(job.rig_id);
  *s.mutable_options() = job.options;
  s.set_state(job.state);
  s.set_stage(job.stage);
  s.set_fraction(job.fraction);
  const Clock::time_point end = Terminal(job.state) ? job.finished_at : Clock::now();
  const double elapsed = job.state == v1::BAKE_STATE_QUEUED || job.started_at == Clock::time_point()
                             ? 0.0
                             : std::chrono::duration<double>(end - job.started_at).count();
  s.set_elapsed_seconds(elapsed);
  s.set_remaining_seconds(job.state == v1::BAKE_STATE_RUNNING && job.fraction > 0.02
                              ? elapsed * (1 - job.fraction) / job.fraction
                              : (Terminal(job.state) ? 0.0 : -1.0));
  if (job.state == v1::BAKE_STATE_QUEUED) {
    uint32_t ahead = 0;
    for (const auto& q : queue_) {
      if (q.get() == &job) break;
      ++ahead;
    }
    s.set_queue_position(ahead);
  }
  if (!job.error.ok()) {
    s.set_error_code(static_cast<int>(job.error.code()));
    s.set_error_message(std::string(job.error.message()));
  }
  if (job.state == v1::BAKE_STATE_DONE) *s.mutable_report() = job.report;
  return s;
}

absl::StatusOr<v1::BakeStatus> BakeJobs::StoredStatus(const std::string& bake_id) {
  absl::StatusOr<std::shared_ptr<const LoadedBake>> loaded = Load(bake_id);
  if (!loaded.ok()) return loaded.status();
  v1::BakeStatus s;
  s.set_bake_id(bake_id);
  s.set_rig_id((*loaded)->rig_id);
  *s.mutable_options() = (*loaded)->options;
  s.set_state(v1::BAKE_STATE_DONE);
  s.set_stage("done");
  s.set_fraction(1.0);
  s.set_elapsed_seconds((*loaded)->report.total_seconds());
  s.set_remaining_seconds(0.0);
  *s.mutable_report() = (*loaded)->report;
  return s;
}

absl::StatusOr<v1::BakeStatus> BakeJobs::Start(const std::string& rig_id, const v1::BakeOptions& options) {
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = rigs_->Get(rig_id);
  if (!rig.ok()) return rig.status();
  absl::StatusOr<v1::BakeOptions> normalized = NormalizeOptions(options);
  if (!normalized.ok()) return normalized.status();
  // What can be refused at once is refused at once (bone geometry); the rest (a mesh with no
  // inside, a skeleton outside the mesh) shows when the domain is built and fails the job.
  if (absl::StatusOr<std::vector<JointHandle>> h = JointHandles((*rig)->rig.skeleton); !h.ok()) return h.status();
  if (normalized->method() == v1::BAKE_METHOD_FAST_MODEL || normalized->method() == v1::BAKE_METHOD_ENDPOINT) {
    const bool fast = normalized->method() == v1::BAKE_METHOD_FAST_MODEL;
    const char* what = fast ? "a FAST model" : "endpoint weights";
    const char* field = fast ? "options.fast.weights_bake_id" : "options.endpoint.weights_bake_id";
    const std::string& source = WeightsSource(*normalized);
    if (source.empty() && !(*rig)->rig.has_weights())
      return absl::FailedPreconditionError(absl::StrCat(
          "rig '", rig_id, "' has no weights for ", what, ": bake weights first (StartBake with method BBW) and "
          "give its id as ", field));
    if (!source.empty()) {
      absl::StatusOr<std::shared_ptr<const LoadedBake>> w = Result(source);
      if (!w.ok()) return w.status();
      if ((*w)->rig_id != rig_id || !(*w)->has_weights())
        return absl::InvalidArgumentError(absl::StrCat(field, " '", source, "' is not a weights bake of rig '", rig_id, "'"));
    }
  }
  const std::string id = BakeId(rig_id, *normalized);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    auto it = jobs_.find(id);
    if (it != jobs_.end() && (it->second->state == v1::BAKE_STATE_QUEUED || it->second->state == v1::BAKE_STATE_RUNNING ||
                              it->second->state == v1::BAKE_STATE_DONE)) {
      v1::BakeStatus s = StatusLocked(*it->second);
      s.set_reused(true);
      return s;
    }
  }
  // Stored by an earlier run (or another replica sharing the store).
  absl::StatusOr<bool> stored = blobs_->Exists(BakeKey(id));
  if (!stored.ok()) return stored.status();
  if (*stored) {
    absl::StatusOr<v1::BakeStatus> s = StoredStatus(id);
    if (s.ok()) {
      s->set_reused(true);
      return s;
    }
    // An unreadable stored bake is recomputed below.
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);  // someone may have queued it meanwhile
  if (it != jobs_.end() && !Terminal(it->second->state)) {
    v1::BakeStatus s = StatusLocked(*it->second);
    s.set_reused(true);
    return s;
  }
  if (static_cast<int>(queue_.size()) >= options_.max_queue)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "bake queue is full (%d waiting, %d workers busy); retry later", queue_.size(), options_.workers));
  auto job = std::make_shared<Job>();
  job->bake_id = id;
  job->rig_id = rig_id;
  job->options = *normalized;
  job->state = v1::BAKE_STATE_UNSPECIFIED;
  SetStateLocked(*job, v1::BAKE_STATE_QUEUED);
  jobs_[id] = job;
  queue_.push_back(job);
  PruneLocked();
  cv_.notify_all();
  return StatusLocked(*job);
}

void BakeJobs::PruneLocked() {
  // Keep at most 1000 finished jobs' statuses in memory; the store has the results.
  size_t finished = 0;
  for (const auto& [id, job] : jobs_) finished += Terminal(job->state);
  for (auto it = jobs_.begin(); finished > 1000 && it != jobs_.end();) {
    if (Terminal(it->second->state)) {
      it = jobs_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
}

absl::StatusOr<v1::BakeStatus> BakeJobs::Get(const std::string& bake_id) {
  if (auto s = CheckBakeId(bake_id); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(bake_id);
    if (it != jobs_.end() && it->second->state != v1::BAKE_STATE_DONE) return StatusLocked(*it->second);
  }
  absl::StatusOr<v1::BakeStatus> stored = StoredStatus(bake_id);
  if (absl::IsNotFound(stored.status())) return absl::NotFoundError(absl::StrCat("bake '", bake_id, "' not found"));
  return stored;
}

absl::Status BakeJobs::Watch(const std::string& bake_id, const std::function<bool(const v1::BakeStatus&)>& on_status,
                             const std::function<bool()>& stop) {
  if (auto s = CheckBakeId(bake_id); !s.ok()) return s;
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(bake_id);
    if (it != jobs_.end()) job = it->second;
  }
  if (!job) {
    absl::StatusOr<v1::BakeStatus> s = Get(bake_id);
    if (!s.ok()) return s.status();
    on_status(*s);
    return absl::OkStatus();
  }
  std::string last;
  while (true) {
    v1::BakeStatus s;
    {
      std::unique_lock<std::mutex> lock(mu_);
      s = StatusLocked(*job);
      std::string key = absl::StrCat(s.state(), "|", s.stage(), "|", s.fraction());
      if (key == last && !Terminal(s.state())) {
        cv_.wait_for(lock, std::chrono::milliseconds(100));
        if (stop()) return absl::CancelledError("watch stopped");
        continue;
      }
      last = std::move(key);
    }
    if (!on_status(s) || Terminal(s.state())) return absl::OkStatus();
    if (stop()) return absl::CancelledError("watch stopped");
  }
}

absl::StatusOr<v1::BakeStatus> BakeJobs::Cancel(const std::string& bake_id) {
  if (auto s = CheckBakeId(bake_id); !s.ok()) return s;
  std::unique_lock<std::mutex> lock(mu_);
  auto it = jobs_.find(bake_id);
  if (it == jobs_.end()) {
    lock.unlock();
    return Get(bake_id);  // stored (DONE) or NOT_FOUND
  }
  std::shared_ptr<Job> job = it->second;
  if (job->state == v1::BAKE_STATE_QUEUED) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
    SetStateLocked(*job, v1::BAKE_STATE_CANCELLED);
    job->stage = "cancelled while queued";
    job->finished_at = Clock::now();
    cv_.notify_all();
  } else if (job->state == v1::BAKE_STATE_RUNNING) {
    job->cancel = true;
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return Terminal(job->state); });
  }
  return StatusLocked(*job);
}

void BakeJobs::WorkerLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = queue_.front();
      queue_.pop_front();
      SetStateLocked(*job, v1::BAKE_STATE_RUNNING);
      job->stage = "starting";
      job->started_at = Clock::now();
    }
    cv_.notify_all();
    Run(job);
  }
}

void BakeJobs::Run(const std::shared_ptr<Job>& job) {
  auto finish = [&](v1::BakeState state, absl::Status error, std::string stage) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      SetStateLocked(*job, state);
      job->error = std::move(error);
      job->stage = std::move(stage);
      if (state == v1::BAKE_STATE_DONE) job->fraction = 1.0;
      job->finished_at = Clock::now();
    }
    cv_.notify_all();
  };
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = rigs_->Get(job->rig_id);
  if (!rig.ok()) return finish(v1::BAKE_STATE_FAILED, rig.status(), "failed");
  absl::StatusOr<BakeOptions> options = ToCoreOptions(job->options, static_cast<int>((*rig)->rig.mesh.V.rows()));
  if (!options.ok()) return finish(v1::BAKE_STATE_FAILED, options.status(), "failed");

  // Progress: monotonic, published at most every 1% or on a stage change.
  Progress progress(
      [this, job](const std::string& stage, double fraction) {
        bool changed = false;
        {
          std::lock_guard<std::mutex> lock(mu_);
          const double f = std::max(job->fraction, std::min(fraction, 0.999));
          if (stage != job->stage || f >= job->fraction + 0.01) {
            job->stage = stage;
            job->fraction = f;
            changed = true;
          }
        }
        if (changed) cv_.notify_all();
      },
      &job->cancel);
  switch (job->options.method()) {
    case v1::BAKE_METHOD_FAST_MODEL:
      return RunFast(job, **rig, progress);
    case v1::BAKE_METHOD_SWING_TWIST:
      return RunSwingTwist(job, **rig, progress);
    case v1::BAKE_METHOD_ENDPOINT:
      return RunEndpoint(job, **rig, progress);
    case v1::BAKE_METHOD_ELASTIC_MODEL:
      return RunElastic(job, **rig, progress);
    default:
      break;
  }
  absl::StatusOr<BakeResult> result = Bake((*rig)->rig.mesh, (*rig)->rig.skeleton, *options, progress);
  if (!result.ok()) {
    if (absl::IsCancelled(result.status()) || job->cancel) return finish(v1::BAKE_STATE_CANCELLED, absl::OkStatus(), "cancelled");
    return finish(v1::BAKE_STATE_FAILED, result.status(), "failed");
  }
  if (job->cancel) return finish(v1::BAKE_STATE_CANCELLED, absl::OkStatus(), "cancelled");

  const v1::BakeReport report = ReportToProto(result->report);
  v1::StoredBake stored;
  DenseToProto(result->weights, stored.mutable_weights());
  auto loaded = std::make_shared<LoadedBake>();
  loaded->dense = std::move(result->weights);
  loaded->sparse = std::move(result->sparse);
  StoreAndFinish(job, report, std::move(stored), std::move(loaded));
}

void BakeJobs::StoreAndFinish(const std::shared_ptr<Job>& job, const v1::BakeReport& report, v1::StoredBake stored,
                              std::shared_ptr<LoadedBake> loaded) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    job->stage = "storing";
  }
  stored.set_format_version(kBakeFormatVersion);
  stored.set_bake_id(job->bake_id);
  stored.set_rig_id(job->rig_id);
  *stored.mutable_options() = job->options;
  *stored.mutable_report() = report;
  stored.set_created_unix_ms(NowUnixMs());
  auto finish = [&](v1::BakeState state, absl::Status error, std::string stage) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      SetStateLocked(*job, state);
      job->error = std::move(error);
      job->stage = std::move(stage);
      if (state == v1::BAKE_STATE_DONE) {
        job->fraction = 1.0;
        job->report = report;
      }
      job->finished_at = Clock::now();
    }
    cv_.notify_all();
  };
  if (job->cancel) return finish(v1::BAKE_STATE_CANCELLED, absl::OkStatus(), "cancelled");
  if (auto s = blobs_->Put(BakeKey(job->bake_id), stored.SerializeAsString()); !s.ok())
    return finish(v1::BAKE_STATE_FAILED, absl::Status(s.code(), absl::StrCat("storing the bake: ", s.message())), "failed");
  loaded->bake_id = job->bake_id;
  loaded->rig_id = job->rig_id;
  loaded->options = job->options;
  loaded->report = report;
  if (loaded->bytes == 0)
    loaded->bytes = sizeof(LoadedBake) + loaded->dense.size() * 8 + loaded->sparse.joints.size() * 8 +
                    stored.fast_model().size();
  cache_.Insert(loaded->bake_id, loaded, loaded->bytes);
  finish(v1::BAKE_STATE_DONE, absl::OkStatus(), "done");
}

void BakeJobs::RunFast(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress) {
  auto fail = [&](absl::Status s) { Fail(job, std::move(s)); };
  // The weights: the rig's own, or a weights bake's; handles are the joints with any weight.
  absl::StatusOr<Eigen::MatrixXd> source_weights = SourceWeights(rig, job->options.fast().weights_bake_id());
  if (!source_weights.ok()) return fail(source_weights.status());
  absl::StatusOr<BakeOptions> options = ToCoreOptions(job->options, 0);
  if (!options.ok()) return fail(options.status());
  options->source_weights = *std::move(source_weights);
  absl::StatusOr<BakeResult> result = Bake(rig.rig.mesh, rig.rig.skeleton, *options, progress);
  if (!result.ok()) return fail(result.status());
  v1::StoredBake stored;
  stored.set_fast_model(SerializeFastModel(*result->fast_model));
  for (int j : result->fast_handle_joints) stored.add_fast_handle_joints(static_cast<uint32_t>(j));
  auto loaded = std::make_shared<LoadedBake>();
  loaded->fast = result->fast_model;
  loaded->fast_handle_joints = result->fast_handle_joints;
  loaded->dense = std::move(result->weights);
  loaded->sparse = std::move(result->sparse);
  StoreAndFinish(job, ReportToProto(result->report), std::move(stored), std::move(loaded));
}

void BakeJobs::Fail(const std::shared_ptr<Job>& job, absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool cancelled = absl::IsCancelled(status) || job->cancel;
    SetStateLocked(*job, cancelled ? v1::BAKE_STATE_CANCELLED : v1::BAKE_STATE_FAILED);
    if (!cancelled) job->error = std::move(status);
    job->stage = cancelled ? "cancelled" : "failed";
    job->finished_at = Clock::now();
  }
  cv_.notify_all();
}

absl::StatusOr<Eigen::MatrixXd> BakeJobs::SourceWeights(const LoadedRig& rig, const std::string& source) {
  if (source.empty()) {
    if (!rig.rig.has_weights())
      return absl::FailedPreconditionError(absl::StrCat("rig '", rig.id, "' has no weights"));
    return ToDense(rig.weights, rig.rig.skeleton.size());
  }
  absl::StatusOr<std::shared_ptr<const LoadedBake>> w = Result(source);
  if (!w.ok()) return w.status();
  if (!(*w)->has_weights())
    return absl::InvalidArgumentError(absl::StrCat("bake '", source, "' holds no bone weights"));
  return (*w)->dense;
}

namespace {

// Loaded form of a swing/twist bake from its dense weights.
absl::Status PrepareSwingTwist(const LoadedRig& rig, int k, LoadedBake* b) {
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(rig.rig.skeleton);
  if (!handles.ok()) return handles.status();
  b->frames = JointFrames(rig.rig.skeleton, *handles);
  const int nj = rig.rig.skeleton.size();
  b->sparse = TopK(b->dense, std::min(k, nj));
  b->swing_twist = std::make_shared<SwingTwistWeights>(MakeSwingTwistWeights(b->dense, b->swing, b->twist, std::min(k, nj)));
  b->bytes = sizeof(LoadedBake) + (b->dense.size() + b->swing.size() + b->twist.size()) * 8 +
             static_cast<size_t>(b->sparse.joints.size()) * 16;
  return absl::OkStatus();
}

absl::Status PrepareEndpoint(const LoadedRig& rig, int k, LoadedBake* b) {
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(rig.rig.skeleton);
  if (!handles.ok()) return handles.status();
  b->bones = StbsBones(*handles);
  const int nj = rig.rig.skeleton.size();
  b->sparse = TopK(b->dense, std::min(k, nj));
  b->endpoint_aligned = AlignEndpointWeights(b->sparse, b->endpoint);
  b->bytes = sizeof(LoadedBake) + (b->dense.size() + b->endpoint.size()) * 8 + static_cast<size_t>(b->sparse.joints.size()) * 12;
  return absl::OkStatus();
}

}  // namespace

void BakeJobs::RunSwingTwist(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress) {
  absl::StatusOr<BakeOptions> options = ToCoreOptions(job->options, 0);
  if (!options.ok()) return Fail(job, options.status());
  absl::StatusOr<BakeResult> result = Bake(rig.rig.mesh, rig.rig.skeleton, *options, progress);
  if (!result.ok()) return Fail(job, result.status());
  if (job->cancel) return Fail(job, absl::CancelledError("cancelled"));
  auto loaded = std::make_shared<LoadedBake>();
  loaded->dense = std::move(result->weights);
  loaded->swing = std::move(result->swing);
  loaded->twist = std::move(result->twist);
  if (auto s = PrepareSwingTwist(rig, static_cast<int>(job->options.influences()), loaded.get()); !s.ok())
    return Fail(job, s);
  v1::StoredBake stored;
  DenseToProto(loaded->dense, stored.mutable_weights());
  DenseToProto(loaded->swing, stored.mutable_swing());
  DenseToProto(loaded->twist, stored.mutable_twist());
  StoreAndFinish(job, ReportToProto(result->report), std::move(stored), std::move(loaded));
}

void BakeJobs::RunEndpoint(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress) {
  absl::StatusOr<Eigen::MatrixXd> W = SourceWeights(rig, job->options.endpoint().weights_bake_id());
  if (!W.ok()) return Fail(job, W.status());
  absl::StatusOr<BakeOptions> options = ToCoreOptions(job->options, 0);
  if (!options.ok()) return Fail(job, options.status());
  options->source_weights = *std::move(W);
  absl::StatusOr<BakeResult> result = Bake(rig.rig.mesh, rig.rig.skeleton, *options, progress);
  if (!result.ok()) return Fail(job, result.status());
  if (job->cancel) return Fail(job, absl::CancelledError("cancelled"));
  auto loaded = std::make_shared<LoadedBake>();
  loaded->dense = std::move(result->weights);
  loaded->endpoint = std::move(result->endpoint);
  if (auto s = PrepareEndpoint(rig, static_cast<int>(job->options.influences()), loaded.get()); !s.ok())
    return Fail(job, s);
  v1::StoredBake stored;
  DenseToProto(loaded->dense, stored.mutable_weights());
  DenseToProto(loaded->endpoint, stored.mutable_endpoint());
  StoreAndFinish(job, ReportToProto(result->report), std::move(stored), std::move(loaded));
}

void BakeJobs::RunElastic(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress) {
  absl::StatusOr<BakeOptions> options = ToCoreOptions(job->options, 0);
  if (!options.ok()) return Fail(job, options.status());
  absl::StatusOr<BakeResult> result = Bake(rig.rig.mesh, rig.rig.skeleton, *options, progress);
  if (!result.ok()) return Fail(job, result.status());
  if (job->cancel) return Fail(job, absl::CancelledError("cancelled"));
  auto loaded = std::make_shared<LoadedBake>();
  loaded->elastic = std::move(result->elastic_model);
  loaded->bytes = sizeof(LoadedBake) + ElasticModelBytes(*loaded->elastic);
  StoreAndFinish(job, ReportToProto(result->report), v1::StoredBake(), std::move(loaded));
}

absl::StatusOr<std::shared_ptr<const LoadedBake>> BakeJobs::Load(const std::string& bake_id) {
  if (auto hit = cache_.Find(bake_id)) return hit;
  absl::StatusOr<std::string> bytes = blobs_->Get(BakeKey(bake_id));
  if (!bytes.ok()) return bytes.status();
  v1::StoredBake stored;
  if (!stored.ParseFromString(*bytes))
    return absl::DataLossError(absl::StrCat("stored bake '", bake_id, "' is corrupt (does not parse)"));
  if (stored.format_version() != kBakeFormatVersion)
    return absl::DataLossError(absl::StrFormat("stored bake '%s' has format version %d, this server reads %d", bake_id,
                                               stored.format_version(), kBakeFormatVersion));
  if (stored.bake_id() != bake_id || BakeId(stored.rig_id(), stored.options()) != bake_id)
    return absl::DataLossError(absl::StrCat("stored bake '", bake_id, "' does not match its content address"));
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = rigs_->Get(stored.rig_id());
  if (!rig.ok()) return absl::Status(rig.status().code(), absl::StrCat("bake '", bake_id, "': ", rig.status().message()));
  if (stored.options().method() == v1::BAKE_METHOD_FAST_MODEL) {
    absl::StatusOr<FastModelPtr> model = ParseFastModel(stored.fast_model());
    if (!model.ok()) return absl::DataLossError(absl::StrCat("stored bake '", bake_id, "': ", model.status().message()));
    auto loaded = std::make_shared<LoadedBake>();
    loaded->bake_id = bake_id;
    loaded->rig_id = stored.rig_id();
    loaded->options = stored.options();
    loaded->report = stored.report();
    loaded->fast = *model;
    for (uint32_t j : stored.fast_handle_joints()) loaded->fast_handle_joints.push_back(static_cast<int>(j));
    loaded->dense = FastModelWeights(**model);
    if (loaded->dense.rows() != (*rig)->rig.mesh.V.rows() ||
        static_cast<int>(loaded->fast_handle_joints.size()) != FastModelHandles(**model))
      return absl::DataLossError(absl::StrCat("stored bake '", bake_id, "' does not match its rig"));
    loaded->sparse = ExactSparse(loaded->dense);
    loaded->bytes = sizeof(LoadedBake) + loaded->dense.size() * 8 + stored.fast_model().size();
    cache_.Insert(bake_id, loaded, loaded->bytes);
    return std::shared_ptr<const LoadedBake>(loaded);
  }
  const int nv = static_cast<int>((*rig)->rig.mesh.V.rows()), nj = (*rig)->rig.skeleton.size();
  const v1::BakeMethod method = stored.options().method();
  if (method == v1::BAKE_METHOD_ELASTIC_MODEL || method == v1::BAKE_METHOD_SWING_TWIST ||
      method == v1::BAKE_METHOD_ENDPOINT) {
    auto loaded = std::make_shared<LoadedBake>();
    loaded->bake_id = bake_id;
    loaded->rig_id = stored.rig_id();
    loaded->options = stored.options();
    loaded->report = stored.report();
    const LoadedRig& r = **rig;
    if (method == v1::BAKE_METHOD_ELASTIC_MODEL) {
      // Nothing but the options is stored: the domain and factorization are rebuilt (deterministic).
      absl::StatusOr<BakeOptions> core = ToCoreOptions(stored.options(), nv);
      if (!core.ok()) return absl::DataLossError(absl::StrCat("stored bake '", bake_id, "': ", core.status().message()));
      absl::StatusOr<BakeResult> model = Bake(r.rig.mesh, r.rig.skeleton, *core);
      if (!model.ok()) return absl::Status(model.status().code(), absl::StrCat("bake '", bake_id, "': ", model.status().message()));
      loaded->elastic = std::move(model->elastic_model);
      loaded->bytes = sizeof(LoadedBake) + ElasticModelBytes(*loaded->elastic);
    } else {
      absl::StatusOr<Eigen::MatrixXd> D = DenseFromProto(stored.weights(), nv, nj, bake_id, "weight");
      if (!D.ok()) return D.status();
      loaded->dense = *std::move(D);
      if (auto s = ValidateWeights(loaded->dense, nv, nj, "stored bake weights"); !s.ok())
        return absl::DataLossError(absl::StrCat("bake '", bake_id, "': ", s.message()));
      const int k = static_cast<int>(stored.options().influences());
      if (method == v1::BAKE_METHOD_SWING_TWIST) {
        absl::StatusOr<Eigen::MatrixXd> S = DenseFromProto(stored.swing(), nv, nj, bake_id, "swing");
        if (!S.ok()) return S.status();
        absl::StatusOr<Eigen::MatrixXd> T = DenseFromProto(stored.twist(), nv, nj, bake_id, "twist");
        if (!T.ok()) return T.status();
        loaded->swing = *std::move(S);
        loaded->twist = *std::move(T);
        if (auto s = PrepareSwingTwist(r, k, loaded.get()); !s.ok()) return s;
      } else {
        absl::StatusOr<Eigen::MatrixXd> E = DenseFromProto(stored.endpoint(), nv, nj, bake_id, "endpoint");
        if (!E.ok()) return E.status();
        loaded->endpoint = *std::move(E);
        if (auto s = PrepareEndpoint(r, k, loaded.get()); !s.ok()) return s;
      }
    }
    cache_.Insert(bake_id, loaded, loaded->bytes);
    return std::shared_ptr<const LoadedBake>(loaded);
  }
  if (static_cast<int>(stored.weights().num_joints()) != nj || stored.weights().values_size() != nv * nj)
    return absl::DataLossError(absl::StrFormat("stored bake '%s' has %d values for %d joints, expected %d x %d",
                                               bake_id, stored.weights().values_size(), stored.weights().num_joints(), nv, nj));
  auto loaded = std::make_shared<LoadedBake>();
  loaded->bake_id = bake_id;
  loaded->rig_id = stored.rig_id();
  loaded->options = stored.options();
  loaded->report = stored.report();
  loaded->dense.resize(nv, nj);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nj; ++j) loaded->dense(i, j) = stored.weights().values(i * nj + j);
  if (auto s = ValidateWeights(loaded->dense, nv, nj, "stored bake weights"); !s.ok())
    return absl::DataLossError(absl::StrCat("bake '", bake_id, "': ", s.message()));
  loaded->sparse = TopK(loaded->dense, std::min<int>(static_cast<int>(stored.options().influences()), nj));
  loaded->bytes = sizeof(LoadedBake) + loaded->dense.size() * 8 + loaded->sparse.joints.size() * 8;
  cache_.Insert(bake_id, loaded, loaded->bytes);
  return std::shared_ptr<const LoadedBake>(loaded);
}

absl::StatusOr<std::shared_ptr<const LoadedBake>> BakeJobs::Result(const std::string& bake_id) {
  if (auto s = CheckBakeId(bake_id); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(bake_id);
    if (it != jobs_.end() && it->second->state != v1::BAKE_STATE_DONE) {
      const Job& job = *it->second;
      return absl::FailedPreconditionError(absl::StrFormat(
          "bake '%s' is %s (%.0f%%%s): wait for it with WatchBake%s", bake_id, StateName(job.state),
          100 * job.fraction, job.error.ok() ? "" : absl::StrCat(", ", job.error.message()),
          Terminal(job.state) ? " after starting it again with StartBake" : ""));
    }
  }
  absl::StatusOr<std::shared_ptr<const LoadedBake>> loaded = Load(bake_id);
  if (absl::IsNotFound(loaded.status()))
    return absl::FailedPreconditionError(absl::StrCat(
        "bake '", bake_id, "' has not been run: start it with StartBake for this rig and options first"));
  return loaded;
}

}  // namespace skinning
