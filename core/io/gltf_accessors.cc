#include "core/io/gltf_accessors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning::gltf_internal {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

int ComponentSize(int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return 1;
    case TINYGLTF_COMPONENT_TYPE_SHORT:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
      return 2;
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return 4;
    default:
      return 0;  // INT and DOUBLE are not glTF 2.0 accessor component types.
  }
}

namespace {

const char* ComponentTypeName(int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
      return "BYTE";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return "UNSIGNED_BYTE";
    case TINYGLTF_COMPONENT_TYPE_SHORT:
      return "SHORT";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
      return "UNSIGNED_SHORT";
    case TINYGLTF_COMPONENT_TYPE_INT:
      return "INT";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
      return "UNSIGNED_INT";
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return "FLOAT";
    case TINYGLTF_COMPONENT_TYPE_DOUBLE:
      return "DOUBLE";
    default:
      return "unknown component type";
  }
}

}  // namespace

int NumComponents(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return 1;
    case TINYGLTF_TYPE_VEC2:
      return 2;
    case TINYGLTF_TYPE_VEC3:
      return 3;
    case TINYGLTF_TYPE_VEC4:
      return 4;
    case TINYGLTF_TYPE_MAT2:
      return 4;
    case TINYGLTF_TYPE_MAT3:
      return 9;
    case TINYGLTF_TYPE_MAT4:
      return 16;
    default:
      return 0;
  }
}

absl::Status CheckBufferView(const tinygltf::Model& model, int view) {
  const tinygltf::BufferView& bv = model.bufferViews[view];
  if (bv.buffer < 0 || static_cast<size_t>(bv.buffer) >= model.buffers.size())
    return Invalid(absl::StrFormat("bufferViews[%d]: buffer %d is out of range (%d buffers)", view,
                                   bv.buffer, model.buffers.size()));
  const size_t size = model.buffers[bv.buffer].data.size();
  if (bv.byteOffset > size || bv.byteLength > size - bv.byteOffset)
    return Invalid(absl::StrFormat("bufferViews[%d]: %d bytes at offset %d but buffers[%d] has %d",
                                   view, bv.byteLength, bv.byteOffset, bv.buffer, size));
  if (bv.byteStride != 0 && (bv.byteStride < 4 || bv.byteStride > 252 || bv.byteStride % 4 != 0))
    return Invalid(
        absl::StrFormat("bufferViews[%d]: byteStride %d is invalid (a multiple of 4 in [4, 252])",
                        view, bv.byteStride));
  return absl::OkStatus();
}

namespace {

const char* TypeName(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return "SCALAR";
    case TINYGLTF_TYPE_VEC2:
      return "VEC2";
    case TINYGLTF_TYPE_VEC3:
      return "VEC3";
    case TINYGLTF_TYPE_VEC4:
      return "VEC4";
    case TINYGLTF_TYPE_MAT2:
      return "MAT2";
    case TINYGLTF_TYPE_MAT3:
      return "MAT3";
    case TINYGLTF_TYPE_MAT4:
      return "MAT4";
    default:
      return "unknown type";
  }
}


bool ComponentAllowed(Components allowed, int component_type, bool normalized) {
  const bool is_float = component_type == TINYGLTF_COMPONENT_TYPE_FLOAT;
  const bool is_unsigned_small = component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE ||
                                 component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT;
  const bool is_signed_small = component_type == TINYGLTF_COMPONENT_TYPE_BYTE ||
                               component_type == TINYGLTF_COMPONENT_TYPE_SHORT;
  switch (allowed) {
    case Components::kFloat:
      return is_float && !normalized;
    case Components::kFloatOrNormalizedUnsigned:
      return (is_float && !normalized) || (is_unsigned_small && normalized);
    case Components::kFloatOrNormalized:
      return (is_float && !normalized) || ((is_unsigned_small || is_signed_small) && normalized);
    case Components::kJointIndices:
      return is_unsigned_small && !normalized;
    case Components::kVertexIndices:
      return (is_unsigned_small || component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT) &&
             !normalized;
    case Components::kQuantizedPosition:
      return (is_float && !normalized) || is_unsigned_small || is_signed_small;
    case Components::kQuantizedTargetPosition:
      return (is_float && !normalized) || is_signed_small;
    case Components::kQuantizedNormal:
      return (is_float && !normalized) || (is_signed_small && normalized);
  }
  return false;
}

const char* AllowedText(Components allowed) {
  switch (allowed) {
    case Components::kFloat:
      return "FLOAT";
    case Components::kFloatOrNormalizedUnsigned:
      return "FLOAT or normalized UNSIGNED_BYTE/UNSIGNED_SHORT";
    case Components::kFloatOrNormalized:
      return "FLOAT or normalized BYTE/UNSIGNED_BYTE/SHORT/UNSIGNED_SHORT";
    case Components::kJointIndices:
      return "non-normalized UNSIGNED_BYTE/UNSIGNED_SHORT";
    case Components::kVertexIndices:
      return "non-normalized UNSIGNED_BYTE/UNSIGNED_SHORT/UNSIGNED_INT";
    case Components::kQuantizedPosition:
      return "FLOAT, or BYTE/UNSIGNED_BYTE/SHORT/UNSIGNED_SHORT normalized or not (KHR_mesh_quantization)";
    case Components::kQuantizedTargetPosition:
      return "FLOAT, or BYTE/SHORT normalized or not (KHR_mesh_quantization)";
    case Components::kQuantizedNormal:
      return "FLOAT, or normalized BYTE/SHORT (KHR_mesh_quantization)";
  }
  return "";
}


// Bytes of one element, with the column padding the spec requires for byte/short matrices.
size_t ElementSize(int component_type, int type) {
  const size_t csize = ComponentSize(component_type);
  if (type == TINYGLTF_TYPE_MAT2 && csize == 1) return 8;
  if (type == TINYGLTF_TYPE_MAT3 && csize == 1) return 12;
  if (type == TINYGLTF_TYPE_MAT3 && csize == 2) return 24;
  return csize * NumComponents(type);
}


// Where a (non-sparse) accessor's elements live: null `base` for an accessor without a buffer
// view (all zeros).
struct Layout {
  const unsigned char* base = nullptr;
  size_t stride = 0;
};

// Checks accessors[index]'s componentType, type, count, byteOffset and byteStride against its
// buffer view and buffer.
absl::StatusOr<Layout> CheckAccessorLayout(const tinygltf::Model& model, int index) {
  const tinygltf::Accessor& a = model.accessors[index];
  if (ComponentSize(a.componentType) == 0)
    return Invalid(
        absl::StrFormat("accessors[%d]: componentType %d (%s) is not a glTF 2.0 "
                        "accessor component type",
                        index, a.componentType, ComponentTypeName(a.componentType)));
  if (NumComponents(a.type) == 0)
    return Invalid(absl::StrFormat("accessors[%d]: unknown type %d", index, a.type));
  if (a.count == 0) return Invalid(absl::StrFormat("accessors[%d]: count is 0", index));
  const size_t elem = ElementSize(a.componentType, a.type);
  if (a.bufferView < 0) return Layout{};
  if (static_cast<size_t>(a.bufferView) >= model.bufferViews.size())
    return Invalid(
        absl::StrFormat("accessors[%d]: bufferView %d is out of range (%d "
                        "bufferViews)",
                        index, a.bufferView, model.bufferViews.size()));
  RETURN_IF_ERROR(CheckBufferView(model, a.bufferView));
  const tinygltf::BufferView& bv = model.bufferViews[a.bufferView];
  const size_t stride = bv.byteStride == 0 ? elem : bv.byteStride;
  if (stride < elem)
    return Invalid(
        absl::StrFormat("accessors[%d]: byteStride %d of bufferViews[%d] is smaller "
                        "than the %d-byte element",
                        index, stride, a.bufferView, elem));
  // Every element needs at least one byte, so a count above byteLength cannot fit; below it the
  // products cannot overflow (byteLength is bounded by a buffer held in memory).
  if (a.count > bv.byteLength || a.byteOffset > bv.byteLength)
    return Invalid(absl::StrFormat(
        "accessors[%d]: %d elements of %d bytes at offset %d do not fit in bufferViews[%d] (%d "
        "bytes)",
        index, a.count, elem, a.byteOffset, a.bufferView, bv.byteLength));
  const size_t needed = (a.count - 1) * stride + elem;
  if (needed > bv.byteLength - a.byteOffset)
    return Invalid(
        absl::StrFormat("accessors[%d]: %d bytes needed at offset %d but "
                        "bufferViews[%d] has %d",
                        index, needed, a.byteOffset, a.bufferView, bv.byteLength));
  return Layout{model.buffers[bv.buffer].data.data() + bv.byteOffset + a.byteOffset, stride};
}

// Largest accessor without a bufferView (all zeros per the spec) that we materialize.
constexpr size_t kMaxZeroAccessorNumbers = size_t{1} << 26;

// Where a sparse accessor's substitutions live: `count` indices (tightly packed, of
// `index_size` bytes) and as many values (tightly packed elements of the accessor's type).
struct SparseLayout {
  const unsigned char* indices = nullptr;
  int index_type = 0;
  size_t index_size = 0;
  const unsigned char* values = nullptr;
  size_t count = 0;
};

// One of the two buffer views of accessors[index].sparse: `what` is "indices" or "values";
// `bytes` are needed from `offset` on. The spec forbids a byteStride on these views.
absl::StatusOr<const unsigned char*> SparseView(const tinygltf::Model& model, int index, const char* what, int view,
                                                int offset, size_t bytes) {
  if (view < 0 || static_cast<size_t>(view) >= model.bufferViews.size())
    return Invalid(absl::StrFormat("accessors[%d].sparse.%s: bufferView %d is out of range (%d bufferViews)", index,
                                   what, view, model.bufferViews.size()));
  RETURN_IF_ERROR(CheckBufferView(model, view));
  const tinygltf::BufferView& bv = model.bufferViews[view];
  if (bv.byteStride != 0)
    return Invalid(absl::StrFormat("accessors[%d].sparse.%s: bufferViews[%d] has a byteStride (%d), which sparse "
                                   "data must not have",
                                   index, what, view, bv.byteStride));
  if (offset < 0 || static_cast<size_t>(offset) > bv.byteLength || bytes > bv.byteLength - offset)
    return Invalid(absl::StrFormat("accessors[%d].sparse.%s: %d bytes needed at offset %d but bufferViews[%d] has %d",
                                   index, what, bytes, offset, view, bv.byteLength));
  return model.buffers[bv.buffer].data.data() + bv.byteOffset + offset;
}

// Checks accessors[index].sparse (an accessor whose layout CheckAccessorLayout accepted): its
// count, the indices' component type and both buffer views.
absl::StatusOr<SparseLayout> CheckSparseLayout(const tinygltf::Model& model, int index) {
  const tinygltf::Accessor& a = model.accessors[index];
  SparseLayout s;
  if (a.sparse.count < 1 || static_cast<size_t>(a.sparse.count) > a.count)
    return Invalid(absl::StrFormat("accessors[%d].sparse: count %d is not in [1, %d] (the accessor's count)", index,
                                   a.sparse.count, a.count));
  s.count = static_cast<size_t>(a.sparse.count);
  s.index_type = a.sparse.indices.componentType;
  if (s.index_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE && s.index_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT &&
      s.index_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT)
    return Invalid(absl::StrFormat("accessors[%d].sparse.indices: componentType %d (%s) is not allowed (expected "
                                   "UNSIGNED_BYTE/UNSIGNED_SHORT/UNSIGNED_INT)",
                                   index, s.index_type, ComponentTypeName(s.index_type)));
  s.index_size = ComponentSize(s.index_type);
  ASSIGN_OR_RETURN(s.indices, SparseView(model, index, "indices", a.sparse.indices.bufferView,
                                         a.sparse.indices.byteOffset, s.count * s.index_size));
  ASSIGN_OR_RETURN(s.values, SparseView(model, index, "values", a.sparse.values.bufferView,
                                        a.sparse.values.byteOffset, s.count * ElementSize(a.componentType, a.type)));
  return s;
}

}  // namespace

absl::Status CheckAllAccessors(const tinygltf::Model& model) {
  for (size_t v = 0; v < model.bufferViews.size(); ++v)
    RETURN_IF_ERROR(CheckBufferView(model, static_cast<int>(v)));
  for (size_t i = 0; i < model.accessors.size(); ++i) {
    RETURN_IF_ERROR(CheckAccessorLayout(model, static_cast<int>(i)).status());
    if (model.accessors[i].sparse.isSparse) RETURN_IF_ERROR(CheckSparseLayout(model, static_cast<int>(i)).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<Decoded> ReadAccessor(const tinygltf::Model& model, int index, int type,
                                     Components allowed, const std::string& use, size_t max_elements) {
  if (index < 0 || static_cast<size_t>(index) >= model.accessors.size())
    return Invalid(absl::StrFormat("%s: accessor %d is out of range (%d accessors)", use, index,
                                   model.accessors.size()));
  const tinygltf::Accessor& a = model.accessors[index];
  const std::string name = absl::StrFormat("accessors[%d] (%s)", index, use);
  if (a.type != type)
    return Invalid(
        absl::StrFormat("%s: type is %s, expected %s", name, TypeName(a.type), TypeName(type)));
  if (!ComponentAllowed(allowed, a.componentType, a.normalized))
    return Invalid(absl::StrFormat("%s: componentType %s%s is not allowed here (expected %s)", name,
                                   a.normalized ? "normalized " : "",
                                   ComponentTypeName(a.componentType), AllowedText(allowed)));
  ASSIGN_OR_RETURN(Layout layout, CheckAccessorLayout(model, index));
  const int csize = ComponentSize(a.componentType);
  const int ncomp = NumComponents(a.type);
  const size_t stride = layout.stride;

  Decoded out;
  out.count = std::min(a.count, max_elements);
  out.components = ncomp;
  // Decodes the element at `element` into out.data's element i.
  auto decode = [&](const unsigned char* element, size_t i, const char* where) -> absl::Status {
    for (int c = 0; c < ncomp; ++c) {
      const unsigned char* p = element + static_cast<size_t>(c) * csize;
      double v = 0;
      switch (a.componentType) {
        case TINYGLTF_COMPONENT_TYPE_FLOAT: {
          float f;
          std::memcpy(&f, p, 4);
          if (!std::isfinite(f))
            return Invalid(absl::StrFormat("accessors[%d] (%s): %selement %d component %d is not finite", index, use,
                                           where, i, c));
          v = f;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE: {
          uint8_t u;
          std::memcpy(&u, p, 1);
          v = a.normalized ? u / 255.0 : u;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_BYTE: {
          int8_t s;
          std::memcpy(&s, p, 1);
          v = a.normalized ? std::max(s / 127.0, -1.0) : s;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
          uint16_t u;
          std::memcpy(&u, p, 2);
          v = a.normalized ? u / 65535.0 : u;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_SHORT: {
          int16_t s;
          std::memcpy(&s, p, 2);
          v = a.normalized ? std::max(s / 32767.0, -1.0) : s;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT: {
          uint32_t u;
          std::memcpy(&u, p, 4);
          v = u;
          break;
        }
        default:
          return Invalid(name + ": unsupported componentType");
      }
      out.data[i * ncomp + c] = v;
    }
    return absl::OkStatus();
  };
  if (layout.base == nullptr) {
    // No buffer view: the spec says every element is zero (before any sparse substitution).
    if (out.count > kMaxZeroAccessorNumbers / ncomp)
      return Invalid(
          absl::StrFormat("%s: count %d is too large for an accessor without data", name, a.count));
    out.data.assign(out.count * ncomp, 0.0);
  } else {
    out.data.resize(out.count * ncomp);
    for (size_t i = 0; i < out.count; ++i) RETURN_IF_ERROR(decode(layout.base + i * stride, i, ""));
  }
  if (!a.sparse.isSparse) return out;
  // Sparse: `count` elements replaced, at strictly increasing indices below the accessor's count.
  ASSIGN_OR_RETURN(const SparseLayout sparse, CheckSparseLayout(model, index));
  const size_t value_size = ElementSize(a.componentType, a.type);
  size_t previous = 0;
  for (size_t k = 0; k < sparse.count; ++k) {
    const unsigned char* p = sparse.indices + k * sparse.index_size;
    size_t target = 0;
    if (sparse.index_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE) {
      uint8_t u;
      std::memcpy(&u, p, 1);
      target = u;
    } else if (sparse.index_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT) {
      uint16_t u;
      std::memcpy(&u, p, 2);
      target = u;
    } else {
      uint32_t u;
      std::memcpy(&u, p, 4);
      target = u;
    }
    if (target >= a.count)
      return Invalid(absl::StrFormat("%s: sparse index %d (entry %d) is out of range (count %d)", name, target, k,
                                     a.count));
    if (k > 0 && target <= previous)
      return Invalid(absl::StrFormat("%s: sparse indices must strictly increase; entry %d is %d after %d", name, k,
                                     target, previous));
    previous = target;
    if (target >= out.count) break;  // the rest lie past the elements read (indices increase)
    RETURN_IF_ERROR(decode(sparse.values + k * value_size, target, "sparse value for "));
  }
  return out;
}

}  // namespace skinning::gltf_internal
