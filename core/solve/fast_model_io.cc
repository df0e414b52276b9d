#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/solve/fast_model.h"

namespace skinning {
namespace {

constexpr char kMagic[8] = {'S', 'K', 'F', 'A', 'S', 'T', 'M', '1'};
constexpr uint32_t kVersion = 1;

template <typename T>
void Put(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void PutDoubles(std::string* out, const double* p, size_t count) {
  out->append(reinterpret_cast<const char*>(p), count * sizeof(double));
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  bool Get(T* v) {
    if (s_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetDoubles(double* p, size_t count) {
    if (count > (s_.size() - pos_) / sizeof(double)) return false;
    if (count == 0) return true;  // p may be null (an empty matrix): memcpy must not see it
    std::memcpy(p, s_.data() + pos_, count * sizeof(double));
    pos_ += count * sizeof(double);
    return true;
  }
  size_t remaining() const { return s_.size() - pos_; }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

// Serialization: magic (8 bytes), version (u32), then little-endian fields:
//   i32 m, extra, r, energy, n (mesh vertices); f64 center[3], scale, energy_scale, c0;
//   f64 weights (n × m', column-major), L̃ (4m' × 4m'), K̃ (3r × 4m'); u8 inert[m'];
//   f64 seeds (extra × m), radii[extra]; i32 q; f64 null directions (4m' × q).

std::string SerializeFastModel(const FastModel& model) {
  std::string out(kMagic, sizeof(kMagic));
  Put(&out, kVersion);
  Put(&out, static_cast<int32_t>(model.m));
  Put(&out, static_cast<int32_t>(model.extra));
  Put(&out, static_cast<int32_t>(model.r));
  Put(&out, static_cast<int32_t>(model.energy));
  Put(&out, static_cast<int32_t>(model.weights.rows()));
  PutDoubles(&out, model.center.data(), 3);
  Put(&out, model.scale);
  Put(&out, model.energy_scale);
  Put(&out, model.c0);
  PutDoubles(&out, model.weights.data(), model.weights.size());
  PutDoubles(&out, model.L.data(), model.L.size());
  PutDoubles(&out, model.K.data(), model.K.size());
  out.append(reinterpret_cast<const char*>(model.inert.data()), model.inert.size());
  PutDoubles(&out, model.seeds.data(), model.seeds.size());
  PutDoubles(&out, model.radii.data(), model.radii.size());
  Put(&out, static_cast<int32_t>(model.null_dirs.cols()));
  PutDoubles(&out, model.null_dirs.data(), model.null_dirs.size());
  return out;
}

absl::StatusOr<FastModelPtr> ParseFastModel(const std::string& bytes) {
  auto corrupt = [](const std::string& why) {
    return absl::DataLossError("fast skinning model: " + why);
  };
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("bad magic (not a serialized fast skinning model)");
  }
  Reader in(bytes);
  char magic[sizeof(kMagic)];
  for (char& c : magic) in.Get(&c);
  uint32_t version = 0;
  if (!in.Get(&version)) return corrupt("truncated header");
  if (version != kVersion) {
    return corrupt(absl::StrFormat("version %u is not supported (expected %u)", version, kVersion));
  }
  int32_t m = 0, extra = 0, r = 0, energy = 0, n = 0;
  if (!in.Get(&m) || !in.Get(&extra) || !in.Get(&r) || !in.Get(&energy) || !in.Get(&n)) {
    return corrupt("truncated header");
  }
  if (m < 1 || extra < 0 || r < 1 || n < 1 || (energy != 0 && energy != 1) || m > (1 << 16) ||
      extra > (1 << 16)) {
    return corrupt(absl::StrFormat("bad sizes m=%d extra=%d r=%d n=%d energy=%d", m, extra, r, n,
                                   energy));
  }
  auto model = std::make_shared<FastModel>();
  model->m = m;
  model->extra = extra;
  model->r = r;
  model->energy = static_cast<FastEnergy>(energy);
  const int64_t mm = m + extra;
  // Exact expected size before allocating anything large.
  const uint64_t doubles = 3 + 3 + static_cast<uint64_t>(n) * mm + 16 * mm * mm +
                           static_cast<uint64_t>(12) * r * mm + static_cast<uint64_t>(extra) * m +
                           extra;
  const uint64_t fixed = doubles * sizeof(double) + static_cast<uint64_t>(mm) + 4;
  if (in.remaining() < fixed) {
    return corrupt(absl::StrFormat("payload is %d bytes, expected at least %d", in.remaining(),
                                   fixed));
  }
  const uint64_t null_bytes = in.remaining() - fixed;
  if (null_bytes % (sizeof(double) * 4 * mm) != 0) {
    return corrupt(absl::StrFormat("payload size %d does not match the header", in.remaining()));
  }
  const uint64_t expected = fixed + null_bytes;
  if (in.remaining() != expected) {
    return corrupt(absl::StrFormat("payload is %d bytes, expected %d", in.remaining(), expected));
  }
  in.GetDoubles(model->center.data(), 3);
  in.Get(&model->scale);
  in.Get(&model->energy_scale);
  in.Get(&model->c0);
  model->weights.resize(n, mm);
  in.GetDoubles(model->weights.data(), model->weights.size());
  model->L.resize(4 * mm, 4 * mm);
  in.GetDoubles(model->L.data(), model->L.size());
  model->K.resize(3 * r, 4 * mm);
  in.GetDoubles(model->K.data(), model->K.size());
  model->inert.resize(mm);
  for (auto& b : model->inert) in.Get(&b);
  model->seeds.resize(extra, m);
  in.GetDoubles(model->seeds.data(), model->seeds.size());
  model->radii.resize(extra);
  in.GetDoubles(model->radii.data(), model->radii.size());
  int32_t q = -1;
  in.Get(&q);
  if (q < 0 || static_cast<uint64_t>(q) * sizeof(double) * 4 * mm != null_bytes) {
    return corrupt(absl::StrFormat("null-direction count %d does not match the payload", q));
  }
  model->null_dirs.resize(4 * mm, q);
  in.GetDoubles(model->null_dirs.data(), model->null_dirs.size());
  if (!(model->scale > 0) || !std::isfinite(model->scale) || !model->center.allFinite() ||
      !std::isfinite(model->energy_scale) || !std::isfinite(model->c0) ||
      !model->weights.allFinite() || !model->L.allFinite() || !model->K.allFinite() ||
      !model->null_dirs.allFinite() || !model->seeds.allFinite() || !model->radii.allFinite()) {
    return corrupt("non-finite or non-positive values");
  }
  for (uint8_t b : model->inert) {
    if (b > 1) return corrupt("bad inert flag");
  }
  return FastModelPtr(std::move(model));
}

}  // namespace skinning
