#include "core/io/gltf_meshopt.h"

#include <meshoptimizer.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/io/gltf_accessors.h"
#include "core/util/status_macros.h"

namespace skinning::gltf_internal {
namespace {

constexpr double kMaxRatio = 128;       // decoded bytes per compressed byte, at most
constexpr double kSlackBytes = 1 << 16;  // on top, for tiny views

// The extension's object on `extensions`, or null.
const tinygltf::Value* ExtensionOf(const tinygltf::ExtensionMap& extensions) {
  auto it = extensions.find(kMeshoptExtension);
  return it == extensions.end() ? nullptr : &it->second;
}

// A non-negative integer field of the extension object (`fallback` when absent and optional).
absl::Status Field(const tinygltf::Value& ext, const std::string& where, const char* key, bool required,
                   double fallback, double* out) {
  if (!ext.Has(key)) {
    if (required) return Invalid(absl::StrFormat("%s.%s: missing", where, key));
    *out = fallback;
    return absl::OkStatus();
  }
  const tinygltf::Value& v = ext.Get(key);
  const double d = v.IsNumber() ? v.GetNumberAsDouble() : -1;
  if (!(d >= 0 && d <= 4294967295.0) || d != static_cast<double>(static_cast<uint64_t>(d)))
    return Invalid(absl::StrFormat("%s.%s: not a non-negative integer", where, key));
  *out = d;
  return absl::OkStatus();
}

absl::Status StringField(const tinygltf::Value& ext, const std::string& where, const char* key, bool required,
                         const char* fallback, std::string* out) {
  if (!ext.Has(key)) {
    if (required) return Invalid(absl::StrFormat("%s.%s: missing", where, key));
    *out = fallback;
    return absl::OkStatus();
  }
  const tinygltf::Value& v = ext.Get(key);
  if (!v.IsString()) return Invalid(absl::StrFormat("%s.%s: not a string", where, key));
  *out = v.Get<std::string>();
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodeMeshoptViews(tinygltf::Model* model, double max_bytes, double* decoded_bytes) {
  std::vector<bool> fallback(model->buffers.size(), false);
  bool any = false;
  for (size_t b = 0; b < model->buffers.size(); ++b) {
    const tinygltf::Value* ext = ExtensionOf(model->buffers[b].extensions);
    if (ext == nullptr || !ext->IsObject()) continue;
    const tinygltf::Value& f = ext->Has("fallback") ? ext->Get("fallback") : tinygltf::Value();
    fallback[b] = f.IsBool() && f.Get<bool>();
  }
  for (size_t i = 0; i < model->bufferViews.size(); ++i)
    any = any || ExtensionOf(model->bufferViews[i].extensions) != nullptr;
  if (!any) return absl::OkStatus();

  // The compressed views, checked, and what each one decodes to.
  struct Job {
    size_t view;
    const unsigned char* source;
    size_t source_bytes;
    size_t count, stride;
    std::string mode, filter;
  };
  std::vector<Job> jobs;
  double decoded_bytes_in_fallbacks = 0, total_decoded = 0;
  for (size_t i = 0; i < model->bufferViews.size(); ++i) {
    const tinygltf::BufferView& bv = model->bufferViews[i];
    const tinygltf::Value* ext = ExtensionOf(bv.extensions);
    const std::string where = absl::StrFormat("bufferViews[%d].extensions.%s", i, kMeshoptExtension);
    if (ext == nullptr) {
      if (bv.buffer >= 0 && static_cast<size_t>(bv.buffer) < fallback.size() && fallback[bv.buffer])
        return Invalid(absl::StrFormat(
            "bufferViews[%d] is not compressed but points into buffers[%d], a %s fallback buffer without data", i,
            bv.buffer, kMeshoptExtension));
      continue;
    }
    if (!ext->IsObject()) return Invalid(where + ": not an object");
    double buffer = 0, offset = 0, length = 0, stride = 0, count = 0;
    Job job;
    job.view = i;
    if (absl::Status s = Field(*ext, where, "buffer", true, 0, &buffer); !s.ok()) return s;
    if (absl::Status s = Field(*ext, where, "byteOffset", false, 0, &offset); !s.ok()) return s;
    if (absl::Status s = Field(*ext, where, "byteLength", true, 0, &length); !s.ok()) return s;
    if (absl::Status s = Field(*ext, where, "byteStride", true, 0, &stride); !s.ok()) return s;
    if (absl::Status s = Field(*ext, where, "count", true, 0, &count); !s.ok()) return s;
    if (absl::Status s = StringField(*ext, where, "mode", true, "", &job.mode); !s.ok()) return s;
    if (absl::Status s = StringField(*ext, where, "filter", false, "NONE", &job.filter); !s.ok()) return s;
    if (buffer >= model->buffers.size())
      return Invalid(absl::StrFormat("%s.buffer: %.0f is out of range (%d buffers)", where, buffer, model->buffers.size()));
    if (fallback[static_cast<size_t>(buffer)])
      return Invalid(absl::StrFormat("%s.buffer: buffers[%.0f] is a fallback buffer without data", where, buffer));
    const std::vector<unsigned char>& source = model->buffers[static_cast<size_t>(buffer)].data;
    if (offset > source.size() || length > source.size() - offset)
      return Invalid(absl::StrFormat("%s: %.0f bytes at offset %.0f but buffers[%.0f] has %d", where, length, offset, buffer,
                                     source.size()));
    job.source = source.data() + static_cast<size_t>(offset);
    job.source_bytes = static_cast<size_t>(length);
    job.count = static_cast<size_t>(count);
    job.stride = static_cast<size_t>(stride);
    const bool attributes = job.mode == "ATTRIBUTES", triangles = job.mode == "TRIANGLES",
               indices = job.mode == "INDICES";
    if (!attributes && !triangles && !indices)
      return Invalid(absl::StrFormat("%s.mode: \"%s\" is not ATTRIBUTES, TRIANGLES or INDICES", where, job.mode));
    if (attributes && (job.stride == 0 || job.stride > 256 || job.stride % 4 != 0))
      return Invalid(absl::StrFormat("%s.byteStride: %d (ATTRIBUTES: a multiple of 4 up to 256)", where, job.stride));
    if (!attributes && job.stride != 2 && job.stride != 4)
      return Invalid(absl::StrFormat("%s.byteStride: %d (%s: 2 or 4)", where, job.stride, job.mode));
    if (triangles && job.count % 3 != 0)
      return Invalid(absl::StrFormat("%s.count: %d is not a multiple of 3 (TRIANGLES)", where, job.count));
    const bool filter_ok = job.filter == "NONE" ||
                           (attributes && job.filter == "OCTAHEDRAL" && (job.stride == 4 || job.stride == 8)) ||
                           (attributes && job.filter == "QUATERNION" && job.stride == 8) ||
                           (attributes && job.filter == "EXPONENTIAL");
    if (!filter_ok)
      return Invalid(absl::StrFormat("%s.filter: \"%s\" does not go with mode %s and byteStride %d", where, job.filter,
                                     job.mode, job.stride));
    const double decoded = count * stride;
    if (decoded > kMaxRatio * length + kSlackBytes)
      return Invalid(absl::StrFormat("%s: %.0f bytes would decode to %.0f, more than %.0f times as many", where, length,
                                     decoded, kMaxRatio));
    if (bv.buffer < 0 || static_cast<size_t>(bv.buffer) >= model->buffers.size())
      return Invalid(absl::StrFormat("bufferViews[%d]: buffer %d is out of range (%d buffers)", i, bv.buffer,
                                     model->buffers.size()));
    if (decoded > static_cast<double>(bv.byteLength))
      return Invalid(absl::StrFormat("%s: %d elements of %d bytes do not fit in the view's %d bytes", where, job.count,
                                     job.stride, bv.byteLength));
    if (fallback[bv.buffer]) decoded_bytes_in_fallbacks += decoded;
    total_decoded += decoded;
    jobs.push_back(job);
  }
  // Views may share one compressed source, so the ratio of each does not bound them all: together
  // they decode to at most kMaxRatio times the bytes of the file's buffers, and to `max_bytes`.
  double payload = 0;
  for (size_t b = 0; b < model->buffers.size(); ++b)
    if (!fallback[b]) payload += static_cast<double>(model->buffers[b].data.size());
  if (total_decoded > kMaxRatio * payload + kSlackBytes)
    return Invalid(absl::StrFormat("the %s views would decode to %.0f bytes in all, more than %.0f times the %.0f bytes "
                                   "of the file's buffers",
                                   kMeshoptExtension, total_decoded, kMaxRatio, payload));
  if (total_decoded > max_bytes)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the %s views would decode to %.0f bytes in all, more than the limit of %.0f", kMeshoptExtension,
        total_decoded, max_bytes));
  if (decoded_bytes != nullptr) *decoded_bytes = total_decoded;
  // A fallback buffer gets its declared size, as zeros, to decode into; its size is bounded by
  // the views decoded into it (each bounded by its compressed bytes above).
  for (size_t b = 0; b < model->buffers.size(); ++b) {
    if (!fallback[b]) continue;
    tinygltf::Buffer& buffer = model->buffers[b];
    double declared = 0;
    for (const tinygltf::BufferView& bv : model->bufferViews)
      if (bv.buffer == static_cast<int>(b)) declared = std::max(declared, static_cast<double>(bv.byteOffset + bv.byteLength));
    if (declared > decoded_bytes_in_fallbacks + kSlackBytes * (1 + jobs.size()))
      return Invalid(absl::StrFormat("buffers[%d]: a %s fallback buffer of %.0f bytes, more than its views decode to",
                                     b, kMeshoptExtension, declared));
    buffer.data.assign(static_cast<size_t>(declared), 0);
  }
  for (const Job& job : jobs) {
    RETURN_IF_ERROR(CheckBufferView(*model, static_cast<int>(job.view)));
    const tinygltf::BufferView& bv = model->bufferViews[job.view];
    std::vector<unsigned char>& target = model->buffers[bv.buffer].data;
    std::vector<unsigned char> out(job.count * job.stride);
    int rc = 0;
    if (job.mode == "ATTRIBUTES") {
      rc = meshopt_decodeVertexBuffer(out.data(), job.count, job.stride, job.source, job.source_bytes);
    } else if (job.mode == "TRIANGLES") {
      rc = meshopt_decodeIndexBuffer(out.data(), job.count, job.stride, job.source, job.source_bytes);
    } else {
      rc = meshopt_decodeIndexSequence(out.data(), job.count, job.stride, job.source, job.source_bytes);
    }
    if (rc != 0)
      return Invalid(absl::StrFormat("bufferViews[%d].extensions.%s: the compressed data does not decode (meshopt "
                                     "error %d)",
                                     job.view, kMeshoptExtension, rc));
    if (job.filter == "OCTAHEDRAL") meshopt_decodeFilterOct(out.data(), job.count, job.stride);
    if (job.filter == "QUATERNION") meshopt_decodeFilterQuat(out.data(), job.count, job.stride);
    if (job.filter == "EXPONENTIAL") meshopt_decodeFilterExp(out.data(), job.count, job.stride);
    if (!out.empty()) std::memcpy(target.data() + bv.byteOffset, out.data(), out.size());
  }
  return absl::OkStatus();
}

}  // namespace skinning::gltf_internal
