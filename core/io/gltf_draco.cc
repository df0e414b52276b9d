#include "core/io/gltf_draco.h"

#include <draco/compression/mesh/mesh_edgebreaker_decoder.h>
#include <draco/compression/mesh/mesh_sequential_decoder.h>
#include <draco/core/decoder_buffer.h>
#include <draco/mesh/mesh.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/io/gltf_accessors.h"

namespace skinning::gltf_internal {
namespace {

constexpr double kMaxRatio = 256;         // decoded bytes per compressed byte, at most
constexpr double kSlackBytes = 1 << 20;   // on top, for tiny meshes
// What a stream's attributes may take while they decode, per byte of the accessors they fill.
constexpr double kMaxAttributeRatio = 8;

// Components of a vertex attribute's type (SCALAR to VEC4); 0 for a matrix or unknown type.
int VertexComponents(int type) {
  const int n = NumComponents(type);
  return n <= 4 ? n : 0;
}

// Appends one attribute's values for every point, converted to OutT, to `out`.
template <typename OutT>
bool AppendValues(const draco::PointAttribute& attribute, uint32_t points, int components,
                  std::vector<unsigned char>* out) {
  std::vector<OutT> value(components);
  for (uint32_t p = 0; p < points; ++p) {
    if (!attribute.ConvertValue<OutT>(attribute.mapped_index(draco::PointIndex(p)),
                                      static_cast<int8_t>(components), value.data()))
      return false;
    const auto* bytes = reinterpret_cast<const unsigned char*>(value.data());
    out->insert(out->end(), bytes, bytes + components * sizeof(OutT));
  }
  return true;
}

// Reads a Draco stream's fields in order; each call fails once the bytes run out.
class StreamReader {
 public:
  StreamReader(const unsigned char* data, size_t size) : data_(data), size_(size) {}
  size_t remaining() const { return size_ - at_; }
  bool U8(uint32_t* v) {
    if (at_ >= size_) return false;
    *v = data_[at_++];
    return true;
  }
  bool U16(uint32_t* v) {  // little-endian
    uint32_t lo, hi;
    if (!U8(&lo) || !U8(&hi)) return false;
    *v = lo | (hi << 8);
    return true;
  }
  // varUI32: 7 bits per byte, least significant first, the high bit set on all but the last.
  bool Var32(uint32_t* v) {
    uint64_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      uint32_t byte;
      if (!U8(&byte)) return false;
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        if (value > UINT32_MAX) return false;
        *v = static_cast<uint32_t>(value);
        return true;
      }
    }
    return false;
  }
  bool Skip(uint64_t n) {
    if (n > remaining()) return false;
    at_ += n;
    return true;
  }

 private:
  const unsigned char* data_;
  size_t size_;
  size_t at_ = 0;
};

// Skips one metadata element: its entries (name: UI8 length and bytes; value: varUI32 length
// and bytes), then its sub-elements, each a name and an element, depth first. The value length is
// a varUI32 as libdraco reads it (the bitstream spec's table says UI8; the two agree below 128).
bool SkipDracoMetadataElement(StreamReader* r) {
  uint64_t left = 1;  // elements still to skip; all but the first start with their name
  for (bool first = true; left > 0; first = false) {
    --left;
    uint32_t length;
    if (!first && (!r->U8(&length) || !r->Skip(length))) return false;
    uint32_t entries, subs;
    if (!r->Var32(&entries)) return false;
    for (uint32_t e = 0; e < entries; ++e) {
      uint32_t value_length;
      if (!r->U8(&length) || !r->Skip(length) || !r->Var32(&value_length) || value_length == 0 ||
          !r->Skip(value_length))
        return false;
    }
    if (!r->Var32(&subs) || subs > r->remaining()) return false;
    left += subs;
  }
  return true;
}

// The metadata section: the attributes' elements (each after the attribute's unique id), then
// the file's.
bool SkipDracoMetadata(StreamReader* r) {
  uint32_t attributes, id;
  if (!r->Var32(&attributes)) return false;
  for (uint32_t a = 0; a < attributes; ++a)
    if (!r->Var32(&id) || !SkipDracoMetadataElement(r)) return false;
  return SkipDracoMetadataElement(r);
}

// libdraco's mesh decoder (Base: edgebreaker or sequential) with one check before any attribute
// value is decoded. By then the connectivity is decoded (the points are known) and so are the
// attributes' descriptors, but libdraco has not yet allocated for their values: for each
// attribute, points × its byte stride (up to 255 components of 8 bytes), and while it decodes
// an integer or quantized attribute, 4 bytes per component and point more. The sum of those is
// held to `max_bytes`; over it the decode fails and refused() says so.
template <typename Base>
class BoundedDracoDecoder : public Base {
 public:
  explicit BoundedDracoDecoder(double max_bytes) : max_bytes_(max_bytes) {}
  bool refused() const { return refused_; }
  double attribute_bytes() const { return attribute_bytes_; }  // the sum, once the check ran

 protected:
  bool DecodeAllAttributes() override {
    const draco::PointCloud* pc = this->point_cloud();
    attribute_bytes_ = 0;
    for (int i = 0; i < pc->num_attributes(); ++i) {
      const draco::PointAttribute* a = pc->attribute(i);
      attribute_bytes_ += static_cast<double>(pc->num_points()) * (a->byte_stride() + 4.0 * a->num_components());
    }
    if (attribute_bytes_ > max_bytes_) {
      refused_ = true;
      return false;
    }
    return Base::DecodeAllAttributes();
  }

 private:
  double max_bytes_;
  double attribute_bytes_ = 0;
  bool refused_ = false;
};

// Decodes `stream` (its header read as `counts`) into `mesh`; an attribute payload over
// `max_attribute_bytes` (BoundedDracoDecoder) is RESOURCE_EXHAUSTED naming it, data that does
// not decode INVALID_ARGUMENT.
absl::Status DecodeDracoMesh(const unsigned char* stream, size_t size, const DracoStreamCounts& counts,
                             double max_attribute_bytes, draco::Mesh* mesh) {
  draco::DecoderBuffer buffer;
  buffer.Init(reinterpret_cast<const char*>(stream), size);
  const draco::DecoderOptions options;
  auto decode = [&](auto& decoder) -> absl::Status {
    const draco::Status status = decoder.Decode(options, &buffer, mesh);
    if (decoder.refused())
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the Draco stream's attributes would take %.0f bytes to decode (%d points), more than the %.0f allowed "
          "(%g times the bytes of the accessors they fill, and 1 MiB)",
          decoder.attribute_bytes(), mesh->num_points(), max_attribute_bytes, kMaxAttributeRatio));
    if (!status.ok()) return Invalid(absl::StrFormat("the Draco data does not decode (%s)", status.error_msg_string()));
    return absl::OkStatus();
  };
  if (counts.edgebreaker) {
    BoundedDracoDecoder<draco::MeshEdgebreakerDecoder> decoder(max_attribute_bytes);
    return decode(decoder);
  }
  BoundedDracoDecoder<draco::MeshSequentialDecoder> decoder(max_attribute_bytes);
  return decode(decoder);
}

}  // namespace

absl::StatusOr<DracoStreamCounts> ReadDracoStreamCounts(const unsigned char* data, size_t size) {
  StreamReader r(data, size);
  if (size < 5 || std::memcmp(data, "DRACO", 5) != 0) return Invalid("it does not start with \"DRACO\"");
  r.Skip(5);
  uint32_t major, minor, encoder_type, method, flags;
  if (!r.U8(&major) || !r.U8(&minor) || !r.U8(&encoder_type) || !r.U8(&method) || !r.U16(&flags))
    return Invalid("its header is truncated");
  if (major != 2 || minor != 2)
    return Invalid(absl::StrFormat("it is Draco bitstream %d.%d; %s is written against 2.2", major, minor,
                                   kDracoExtension));
  if (encoder_type != 1) return Invalid(absl::StrFormat("it is not a triangle mesh (encoder type %d)", encoder_type));
  if (method > 1) return Invalid(absl::StrFormat("encoding method %d is neither sequential (0) nor edgebreaker (1)",
                                                 method));
  constexpr uint32_t kMetadataFlag = 0x8000;
  if ((flags & kMetadataFlag) != 0 && !SkipDracoMetadata(&r)) return Invalid("its metadata is malformed");
  DracoStreamCounts counts;
  counts.edgebreaker = method == 1;
  uint32_t traversal;
  const bool ok = counts.edgebreaker ? r.U8(&traversal) && r.Var32(&counts.vertices) && r.Var32(&counts.faces) &&
                                           r.U8(&counts.attribute_seams)
                                     : r.Var32(&counts.faces) && r.Var32(&counts.vertices);
  if (!ok) return Invalid("its connectivity header is truncated");
  return counts;
}

absl::Status DecodeDracoPrimitives(tinygltf::Model* model, double max_bytes) {
  int output = -1;  // the buffer the decoded data goes to, made on first use
  std::map<int, std::string> decoded_accessors;  // accessor → the primitive that filled it
  double total_declared = 0;  // over the primitives so far (they may share one Draco view)
  for (size_t m = 0; m < model->meshes.size(); ++m) {
    for (size_t p = 0; p < model->meshes[m].primitives.size(); ++p) {
      tinygltf::Primitive& prim = model->meshes[m].primitives[p];
      auto ext_it = prim.extensions.find(kDracoExtension);
      if (ext_it == prim.extensions.end()) continue;
      const std::string where = absl::StrFormat("meshes[%d].primitives[%d].extensions.%s", m, p, kDracoExtension);
      const tinygltf::Value& ext = ext_it->second;
      if (!ext.IsObject() || !ext.Has("bufferView") || !ext.Get("bufferView").IsInt() || !ext.Has("attributes") ||
          !ext.Get("attributes").IsObject())
        return Invalid(where + ": needs an integer bufferView and an attributes object");
      const int view = ext.Get("bufferView").GetNumberAsInt();
      if (view < 0 || static_cast<size_t>(view) >= model->bufferViews.size())
        return Invalid(absl::StrFormat("%s.bufferView: %d is out of range (%d bufferViews)", where, view,
                                       model->bufferViews.size()));
      if (absl::Status s = CheckBufferView(*model, view); !s.ok())
        return Invalid(absl::StrFormat("%s.bufferView: %s", where, s.message()));
      const tinygltf::BufferView& bv = model->bufferViews[view];
      if (prim.indices < 0 || static_cast<size_t>(prim.indices) >= model->accessors.size())
        return Invalid(where + ": the primitive needs an indices accessor (Draco stores faces)");

      // The accessors the extension fills, checked against the compressed size before decoding.
      struct Target {
        std::string name;
        int accessor;
        uint32_t unique_id;
      };
      std::vector<Target> targets;
      double attribute_bytes = 0;  // of the accessors the extension fills
      const tinygltf::Value& attributes = ext.Get("attributes");
      for (const std::string& name : attributes.Keys()) {
        const tinygltf::Value& id = attributes.Get(name);
        if (!id.IsInt() || id.GetNumberAsInt() < 0)
          return Invalid(absl::StrFormat("%s.attributes.%s: not a non-negative integer", where, name));
        auto it = prim.attributes.find(name);
        if (it == prim.attributes.end() || it->second < 0 || static_cast<size_t>(it->second) >= model->accessors.size())
          return Invalid(absl::StrFormat("%s.attributes.%s: the primitive has no such attribute accessor", where, name));
        const tinygltf::Accessor& a = model->accessors[it->second];
        if (VertexComponents(a.type) == 0 || ComponentSize(a.componentType) == 0)
          return Invalid(absl::StrFormat("%s.attributes.%s: accessors[%d] has an unsupported type", where, name,
                                         it->second));
        attribute_bytes += static_cast<double>(a.count) * VertexComponents(a.type) * ComponentSize(a.componentType);
        targets.push_back({name, it->second, static_cast<uint32_t>(id.GetNumberAsInt())});
      }
      const double declared_bytes = static_cast<double>(model->accessors[prim.indices].count) * 4 + attribute_bytes;
      if (declared_bytes > kMaxRatio * static_cast<double>(bv.byteLength) + kSlackBytes)
        return Invalid(absl::StrFormat("%s: %d compressed bytes would decode to %.0f, more than %.0f times as many",
                                       where, bv.byteLength, declared_bytes, kMaxRatio));
      total_declared += declared_bytes;
      if (total_declared > max_bytes)
        return absl::ResourceExhaustedError(absl::StrFormat(
            "%s: the Draco primitives would decode to %.0f bytes so far, more than the limit of %.0f", where,
            total_declared, max_bytes));

      // Draco allocates for the counts in its stream's header before reading anything else, so
      // they are compared with the accessors' (bounded above) first.
      const unsigned char* stream = model->buffers[bv.buffer].data.data() + bv.byteOffset;
      absl::StatusOr<DracoStreamCounts> counts = ReadDracoStreamCounts(stream, bv.byteLength);
      if (!counts.ok())
        return Invalid(absl::StrFormat("%s: the Draco data does not decode (%s)", where, counts.status().message()));
      const size_t index_count = model->accessors[prim.indices].count;
      if (index_count != static_cast<size_t>(counts->faces) * 3)
        return Invalid(absl::StrFormat("%s: the Draco stream declares %d faces but accessors[%d] (indices) has count %d",
                                       where, counts->faces, prim.indices, index_count));
      // Every point is one of the accessors' elements (sequential: exactly; edgebreaker: each
      // connectivity vertex is at least one point).
      for (const Target& t : targets)
        if (counts->vertices > model->accessors[t.accessor].count)
          return Invalid(absl::StrFormat("%s: the Draco stream declares %d %s but accessors[%d] (%s) has count %d", where,
                                         counts->vertices, counts->edgebreaker ? "vertices" : "points", t.accessor,
                                         t.name, model->accessors[t.accessor].count));

      // An edgebreaker stream has one seam table per attribute but the position, and libdraco
      // allocates for each one per corner: more tables than the extension has attributes would be
      // for attributes the file does not use.
      if (counts->edgebreaker && counts->attribute_seams > targets.size())
        return Invalid(absl::StrFormat("%s: the Draco stream declares %d attribute seam tables but the extension names "
                                       "%d attributes",
                                       where, counts->attribute_seams, targets.size()));

      const auto mesh = std::make_unique<draco::Mesh>();
      if (absl::Status s = DecodeDracoMesh(stream, bv.byteLength, *counts,
                                           kMaxAttributeRatio * attribute_bytes + kSlackBytes, mesh.get());
          !s.ok())
        return absl::Status(s.code(), absl::StrFormat("%s: %s", where, s.message()));
      const uint32_t points = mesh->num_points(), faces = mesh->num_faces();

      if (output < 0) {
        model->buffers.emplace_back();
        output = static_cast<int>(model->buffers.size()) - 1;
      }
      auto add_view = [&](const std::vector<unsigned char>& bytes) {
        std::vector<unsigned char>& data = model->buffers[output].data;
        while (data.size() % 4 != 0) data.push_back(0);
        tinygltf::BufferView v;
        v.buffer = output;
        v.byteOffset = data.size();
        v.byteLength = bytes.size();
        data.insert(data.end(), bytes.begin(), bytes.end());
        model->bufferViews.push_back(v);
        return static_cast<int>(model->bufferViews.size()) - 1;
      };
      auto claim = [&](int accessor) -> absl::Status {
        auto [it, fresh] = decoded_accessors.emplace(accessor, where);
        if (!fresh)
          return Invalid(absl::StrFormat("%s: accessors[%d] is also filled by %s", where, accessor, it->second));
        return absl::OkStatus();
      };

      // Faces → the indices accessor, as UNSIGNED_INT.
      tinygltf::Accessor& indices = model->accessors[prim.indices];
      if (indices.count != static_cast<size_t>(faces) * 3)
        return Invalid(absl::StrFormat("%s: accessors[%d] (indices) has count %d but the Draco mesh has %d faces",
                                       where, prim.indices, indices.count, faces));
      if (absl::Status s = claim(prim.indices); !s.ok()) return s;
      std::vector<unsigned char> index_bytes(static_cast<size_t>(faces) * 3 * 4);
      for (uint32_t f = 0; f < faces; ++f)
        for (int c = 0; c < 3; ++c) {
          const uint32_t v = mesh->face(draco::FaceIndex(f))[c].value();
          std::memcpy(index_bytes.data() + (static_cast<size_t>(f) * 3 + c) * 4, &v, 4);
        }
      indices.bufferView = add_view(index_bytes);
      indices.byteOffset = 0;
      indices.componentType = TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT;
      indices.sparse.isSparse = false;

      for (const Target& t : targets) {
        tinygltf::Accessor& a = model->accessors[t.accessor];
        const draco::PointAttribute* attribute = mesh->GetAttributeByUniqueId(t.unique_id);
        if (attribute == nullptr)
          return Invalid(absl::StrFormat("%s.attributes.%s: the Draco mesh has no attribute with id %d", where, t.name,
                                         t.unique_id));
        const int components = VertexComponents(a.type);
        if (a.count != points || attribute->num_components() != components)
          return Invalid(absl::StrFormat(
              "%s.attributes.%s: accessors[%d] has %d elements of %d components but the Draco mesh has %d points of %d",
              where, t.name, t.accessor, a.count, components, points, attribute->num_components()));
        if (absl::Status s = claim(t.accessor); !s.ok()) return s;
        std::vector<unsigned char> bytes;
        bool ok = false;
        switch (a.componentType) {
          case TINYGLTF_COMPONENT_TYPE_FLOAT:
            ok = AppendValues<float>(*attribute, points, components, &bytes);
            break;
          case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
            ok = AppendValues<uint8_t>(*attribute, points, components, &bytes);
            break;
          case TINYGLTF_COMPONENT_TYPE_BYTE:
            ok = AppendValues<int8_t>(*attribute, points, components, &bytes);
            break;
          case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
            ok = AppendValues<uint16_t>(*attribute, points, components, &bytes);
            break;
          case TINYGLTF_COMPONENT_TYPE_SHORT:
            ok = AppendValues<int16_t>(*attribute, points, components, &bytes);
            break;
          case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
            ok = AppendValues<uint32_t>(*attribute, points, components, &bytes);
            break;
        }
        if (!ok)
          return Invalid(absl::StrFormat("%s.attributes.%s: its values do not convert to the accessor's type", where,
                                         t.name));
        // Draco stores normals octahedrally quantized: decoded, they are unit length only to
        // within that precision. The spec wants unit normals.
        if (t.name == "NORMAL" && a.componentType == TINYGLTF_COMPONENT_TYPE_FLOAT && components == 3) {
          for (size_t i = 0; i + 12 <= bytes.size(); i += 12) {
            float n[3];
            std::memcpy(n, bytes.data() + i, 12);
            const float length = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            if (length > 0)
              for (float& c : n) c /= length;
            std::memcpy(bytes.data() + i, n, 12);
          }
        }
        a.bufferView = add_view(bytes);
        a.byteOffset = 0;
        a.sparse.isSparse = false;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace skinning::gltf_internal
