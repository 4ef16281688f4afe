// The checks of a GEMV launch's parameters (gemv.h): each failure names the field and what is
// wrong with it.
#include "backend/cuda/gemv_check.h"

#include <string>
#include <string_view>
#include <utility>

#include "backend/cuda/launch_checks.h"

namespace se::cuda {
namespace {

constexpr std::string_view kName = "gemv";

Status field_error(const std::string& field, const std::string& what) {
    return invalid_argument(std::string(kName) + ": " + field + " " + what);
}

// writes_y: false for up of kSiluMul, whose y is never written (and may be null).
Status check_segment(const GemvSegment& s, int index, bool writes_y) {
    const std::string name = "segments[" + std::to_string(index) + "]";
    if (s.n < 0) return field_error(name + ".n", "is " + std::to_string(s.n));
    if (s.n == 0) return Status::ok_status();
    if (s.w == nullptr) return field_error(name + ".w", "is null");
    SE_RETURN_IF_ERROR(check_aligned(kName, name + ".w", s.w));
    if (!writes_y) return Status::ok_status();
    if (s.y == nullptr) return field_error(name + ".y", "is null");
    SE_RETURN_IF_ERROR(check_aligned(kName, name + ".y", s.y));
    if (s.ldy < s.n) {
        return field_error(name + ".ldy", std::to_string(s.ldy) + " < n " + std::to_string(s.n));
    }
    if (s.y_dtype != DType::kBF16 && s.y_dtype != DType::kF32) {
        return field_error(name + ".y_dtype",
                           "is " + std::string(dtype_name(s.y_dtype)) + ", not bf16 or f32");
    }
    return Status::ok_status();
}

// kRopeStore: q, k and v of whole heads, q's output in bf16, and the rotation's and the store's
// inputs.
Status check_rope(const GemvParams& p) {
    const GemvRopeStore& r = p.rope;
    if (p.num_segments != 3) {
        return field_error("num_segments", "is " + std::to_string(p.num_segments) +
                                               ", kRopeStore takes q, k and v");
    }
    if (r.head_dim <= 0 || r.head_dim % kGemvTileRows != 0) {
        return field_error("rope.head_dim",
                           "is " + std::to_string(r.head_dim) + ", not a positive multiple of 16");
    }
    for (int i = 0; i < 3; ++i) {
        if (p.segments[i].n % r.head_dim != 0) {
            return field_error("segments[" + std::to_string(i) + "].n",
                               std::to_string(p.segments[i].n) + " is not whole heads of " +
                                   std::to_string(r.head_dim));
        }
    }
    if (p.segments[2].n != p.segments[1].n) {
        return field_error("segments[2].n", std::to_string(p.segments[2].n) + " != k's " +
                                                std::to_string(p.segments[1].n));
    }
    if (p.segments[0].y_dtype != DType::kBF16) {
        return field_error("segments[0].y_dtype", "is not bf16 (kRopeStore writes activations)");
    }
    if (r.style != RopeStyle::kNeox && r.style != RopeStyle::kInterleaved) {
        return field_error("rope.style", "is unknown");
    }
    if (r.num_slots < 0) return field_error("rope.num_slots", "is " + std::to_string(r.num_slots));
    const std::pair<const char*, const void*> pointers[] = {{"rope.positions", r.positions},
                                                            {"rope.inv_freq", r.inv_freq},
                                                            {"rope.slots", r.slots},
                                                            {"rope.k_blocks", r.k_blocks},
                                                            {"rope.v_blocks", r.v_blocks}};
    for (const auto& [field, pointer] : pointers) {
        if (pointer == nullptr) return field_error(field, "is null");
    }
    return Status::ok_status();
}

// kResidualNorm: one row of x, one segment into bf16, the residual, norm weight and sums.
Status check_residual_norm(const GemvParams& p) {
    if (p.m != 1) return field_error("m", "is " + std::to_string(p.m) + ", kResidualNorm takes 1");
    if (p.num_segments != 1) {
        return field_error("num_segments",
                           "is " + std::to_string(p.num_segments) + ", kResidualNorm takes 1");
    }
    if (p.segments[0].y_dtype != DType::kBF16) {
        return field_error("segments[0].y_dtype", "is not bf16 (kResidualNorm writes activations)");
    }
    const std::pair<const char*, const void*> pointers[] = {{"norm.residual", p.norm.residual},
                                                            {"norm.weight", p.norm.weight},
                                                            {"norm.sq_sums", p.norm.sq_sums}};
    for (const auto& [field, pointer] : pointers) {
        if (pointer == nullptr) return field_error(field, "is null");
    }
    return Status::ok_status();
}

}  // namespace

Status check_gemv_params(const GemvParams& p) {
    if (p.m < 1 || p.m > kGemvMaxRows) {
        return field_error("m", "is " + std::to_string(p.m) + ", not in [1, " +
                                    std::to_string(kGemvMaxRows) + "]");
    }
    if (p.k <= 0 || p.k > kGemvMaxK) {
        return field_error("k", "is " + std::to_string(p.k) + ", not in [8, 2^30]");
    }
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "k", p.k));
    SE_RETURN_IF_ERROR(check_vec_elems(kName, "ldx", p.ldx));
    if (p.ldx < p.k) {
        return field_error("ldx", std::to_string(p.ldx) + " < k " + std::to_string(p.k));
    }
    if (p.x == nullptr) return field_error("x", "is null");
    SE_RETURN_IF_ERROR(check_aligned(kName, "x", p.x));
    if (p.num_segments < 1 || p.num_segments > kGemvMaxSegments) {
        return field_error("num_segments", "is " + std::to_string(p.num_segments) +
                                               ", not in [1, " + std::to_string(kGemvMaxSegments) +
                                               "]");
    }
    if (p.x_scale.sq_sums != nullptr && p.m != 1) {
        return field_error("x_scale", "is set for m " + std::to_string(p.m) + " (m = 1 only)");
    }
    const bool gated = p.epilogue == GemvEpilogue::kSiluMul;
    const bool fused = gated || p.epilogue == GemvEpilogue::kRopeStore;
    for (int i = 0; i < p.num_segments; ++i) {
        SE_RETURN_IF_ERROR(check_segment(p.segments[i], i, !fused || i == 0));
    }
    if (p.epilogue == GemvEpilogue::kRopeStore) return check_rope(p);
    if (p.epilogue == GemvEpilogue::kResidualNorm) return check_residual_norm(p);
    if (!gated) return Status::ok_status();
    if (p.num_segments != 2) {
        return field_error("num_segments",
                           "is " + std::to_string(p.num_segments) + ", kSiluMul takes gate and up");
    }
    if (p.segments[1].n != p.segments[0].n) {
        return field_error("segments[1].n", std::to_string(p.segments[1].n) + " != gate's " +
                                                std::to_string(p.segments[0].n));
    }
    if (p.segments[0].y_dtype != DType::kBF16) {
        return field_error("segments[0].y_dtype", "is not bf16 (kSiluMul writes activations)");
    }
    return Status::ok_status();
}

}  // namespace se::cuda
