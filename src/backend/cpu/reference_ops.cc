#include "backend/cpu/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/dequant.h"
#include "core/check.h"
#include "core/float_elems.h"

namespace se {
namespace {

void rms_norm_span(const float* x, const float* w, int64_t c, float eps, float* y) {
    double sum = 0.0;
    for (int64_t i = 0; i < c; ++i) sum += double{x[i]} * x[i];
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(c) + eps);
    for (int64_t i = 0; i < c; ++i) y[i] = static_cast<float>(w[i] * (x[i] * inv));
}

// Element (entry, kv_head, d) of a sequence's K or V through its block table.
float kv_elem(const PagedKvCache& cache, const void* blocks, const PagedSeq& seq, int32_t entry,
              int32_t kv_head, int32_t d) {
    const PagedKvLayout& l = cache.layout;
    const int64_t slot =
        int64_t{seq.block_table[entry / l.block_size]} * l.block_size + entry % l.block_size;
    return load_float(l.dtype, blocks, (slot * l.num_kv_heads + kv_head) * l.head_dim + d);
}

// Output row i, head h of one sequence: softmax over entries [0, kv_len - q_len + i].
void attend_one(const ConstTensorView& q, const PagedKvCache& cache, const PagedSeq& seq,
                const AttentionArgs& args, int32_t i, int32_t h, float* out) {
    const int32_t kv_head = h / (args.num_heads / args.num_kv_heads);
    const int32_t visible = seq.kv_len - seq.q_len + i + 1;
    const float* qv = q.f32() + (seq.q_start + i) * q.cols + int64_t{h} * args.head_dim;
    std::vector<double> scores(visible);
    for (int32_t e = 0; e < visible; ++e) {
        double dot = 0.0;
        for (int32_t d = 0; d < args.head_dim; ++d)
            dot += double{qv[d]} * kv_elem(cache, cache.k_blocks, seq, e, kv_head, d);
        scores[e] = dot * args.scale;
    }
    const double max = *std::max_element(scores.begin(), scores.end());
    double total = 0.0;
    for (double& s : scores) {
        s = std::exp(s - max);
        total += s;
    }
    for (int32_t d = 0; d < args.head_dim; ++d) {
        double acc = 0.0;
        for (int32_t e = 0; e < visible; ++e)
            acc += scores[e] * kv_elem(cache, cache.v_blocks, seq, e, kv_head, d);
        out[d] = static_cast<float>(acc / total);
    }
}

// Output row i, head h of a gathered read: softmax over the listed entries only.
void attend_listed(const ConstTensorView& q, const PagedKvCache& cache, const GatherSeq& seq,
                   const AttentionArgs& args, int32_t i, int32_t h, float* out) {
    const int32_t kv_head = h / (args.num_heads / args.num_kv_heads);
    const std::vector<int32_t>& listed = seq.lists[seq.lists.size() == 1 ? 0 : kv_head];
    // Causal over the list: the last q_len listed entries are the step's own rows.
    const auto visible = static_cast<int64_t>(listed.size()) - (seq.q_len - 1 - i);
    std::fill(out, out + args.head_dim, 0.0f);
    if (visible <= 0) return;
    const std::span<const int32_t> entries(listed.data(), static_cast<size_t>(visible));
    const PagedSeq paged{.block_table = seq.block_table};
    const float* qv = q.f32() + (seq.q_start + i) * q.cols + int64_t{h} * args.head_dim;
    std::vector<double> scores(entries.size());
    for (size_t j = 0; j < entries.size(); ++j) {
        double dot = 0.0;
        for (int32_t d = 0; d < args.head_dim; ++d)
            dot += double{qv[d]} * kv_elem(cache, cache.k_blocks, paged, entries[j], kv_head, d);
        scores[j] = dot * args.scale;
    }
    const double max = *std::max_element(scores.begin(), scores.end());
    double total = 0.0;
    for (double& s : scores) {
        s = std::exp(s - max);
        total += s;
    }
    for (int32_t d = 0; d < args.head_dim; ++d) {
        double acc = 0.0;
        for (size_t j = 0; j < entries.size(); ++j)
            acc += scores[j] * kv_elem(cache, cache.v_blocks, paged, entries[j], kv_head, d);
        out[d] = static_cast<float>(acc / total);
    }
}

}  // namespace

void ReferenceOps::embedding(std::span<const int32_t> ids, const ConstTensorView& table,
                             TensorView y) {
    SE_CHECK(y.rows == static_cast<int64_t>(ids.size()) && y.cols == table.cols);
    for (size_t i = 0; i < ids.size(); ++i) {
        SE_CHECK(ids[i] >= 0 && ids[i] < table.rows);
        dequantize_row_reference(table.dtype, table.row(ids[i]), y.f32_row(i), table.cols);
    }
}

void ReferenceOps::embedding_shard(std::span<const int32_t> ids, const ConstTensorView& table,
                                   int32_t first_id, TensorView y) {
    SE_CHECK(y.rows == static_cast<int64_t>(ids.size()) && y.cols == table.cols);
    for (size_t i = 0; i < ids.size(); ++i) {
        SE_CHECK(ids[i] >= 0);
        const int64_t row = int64_t{ids[i]} - first_id;
        float* out = y.f32_row(static_cast<int64_t>(i));
        if (row >= 0 && row < table.rows) {
            dequantize_row_reference(table.dtype, table.row(row), out, table.cols);
        } else {
            for (int64_t c = 0; c < y.cols; ++c) out[c] = 0.0f;
        }
    }
}

void ReferenceOps::matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) {
    SE_CHECK(x.cols == w.cols && y.rows == x.rows && y.cols == w.rows);
    std::vector<float> row(w.cols);
    for (int64_t j = 0; j < w.rows; ++j) {
        dequantize_row_reference(w.dtype, w.row(j), row.data(), w.cols);
        for (int64_t i = 0; i < x.rows; ++i) {
            double acc = 0.0;
            for (int64_t c = 0; c < x.cols; ++c) acc += double{x.f32()[i * x.cols + c]} * row[c];
            y.f32_row(i)[j] = static_cast<float>(acc);
        }
    }
}

void ReferenceOps::add_bias(TensorView y, const ConstTensorView& bias) {
    SE_CHECK(bias.num_elems() == y.cols);
    for (int64_t i = 0; i < y.rows; ++i) {
        for (int64_t c = 0; c < y.cols; ++c) y.f32_row(i)[c] += bias.f32()[c];
    }
}

void ReferenceOps::add(TensorView y, const ConstTensorView& x) {
    SE_CHECK(y.rows == x.rows && y.cols == x.cols);
    for (int64_t i = 0; i < y.num_elems(); ++i) y.f32()[i] += x.f32()[i];
}

void ReferenceOps::rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                            TensorView y) {
    SE_CHECK(x.rows == y.rows && x.cols == y.cols && weight.num_elems() == x.cols);
    for (int64_t i = 0; i < x.rows; ++i)
        rms_norm_span(x.f32() + i * x.cols, weight.f32(), x.cols, eps, y.f32_row(i));
}

void ReferenceOps::head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                                 float eps) {
    SE_CHECK(x.cols % head_dim == 0 && weight.num_elems() == head_dim);
    for (int64_t h = 0; h < x.num_elems() / head_dim; ++h)
        rms_norm_span(x.f32() + h * head_dim, weight.f32(), head_dim, eps, x.f32() + h * head_dim);
}

void ReferenceOps::rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) {
    const auto half = static_cast<int64_t>(args.inv_freq.size());
    SE_CHECK(static_cast<int64_t>(positions.size()) == x.rows && 2 * half <= args.head_dim);
    for (int64_t i = 0; i < x.rows; ++i) {
        for (int64_t h = 0; h < x.cols / args.head_dim; ++h) {
            float* v = x.f32_row(i) + h * args.head_dim;
            for (int64_t f = 0; f < half; ++f) {
                // The angle is an f32 product, as HF computes it.
                const float angle = static_cast<float>(positions[i]) * args.inv_freq[f];
                const double c = std::cos(double{angle});
                const double s = std::sin(double{angle});
                const bool neox = args.style == RopeStyle::kNeox;
                const int64_t ia = neox ? f : 2 * f;
                const int64_t ib = neox ? f + half : 2 * f + 1;
                const double a = v[ia];
                const double b = v[ib];
                v[ia] = static_cast<float>(a * c - b * s);
                v[ib] = static_cast<float>(b * c + a * s);
            }
        }
    }
}

void ReferenceOps::silu_mul(const ConstTensorView& gate, const ConstTensorView& up, TensorView y) {
    SE_CHECK(gate.num_elems() == y.num_elems() && up.num_elems() == y.num_elems());
    for (int64_t i = 0; i < y.num_elems(); ++i) {
        const double g = gate.f32()[i];
        y.f32()[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up.f32()[i]);
    }
}

void ReferenceOps::store_kv(const ConstTensorView& k, const ConstTensorView& v,
                            const KvWrite& write, const PagedKvCache& cache) {
    const int64_t entry = cache.layout.entry_elems();
    SE_CHECK(k.rows == static_cast<int64_t>(write.slots.size()) && k.cols == entry &&
             v.rows == k.rows && v.cols == entry);
    for (int64_t t = 0; t < k.rows; ++t) {
        const int64_t slot = write.slots[t];
        SE_CHECK(slot >= 0 && slot < cache.num_blocks * cache.layout.block_size);
        for (int64_t e = 0; e < entry; ++e) {
            store_float(cache.layout.dtype, cache.k_blocks, slot * entry + e,
                        k.f32()[t * entry + e]);
            store_float(cache.layout.dtype, cache.v_blocks, slot * entry + e,
                        v.f32()[t * entry + e]);
        }
    }
}

void ReferenceOps::attention(const ConstTensorView& q, const PagedKvRead& kv,
                             const AttentionArgs& args, TensorView out) {
    SE_CHECK(q.cols == int64_t{args.num_heads} * args.head_dim && out.cols == q.cols &&
             out.rows == q.rows);
    for (const PagedSeq& seq : kv.seqs) {
        for (int32_t i = 0; i < seq.q_len; ++i) {
            for (int32_t h = 0; h < args.num_heads; ++h) {
                float* dst = out.f32_row(seq.q_start + i) + int64_t{h} * args.head_dim;
                if (seq.kv_len == 0) {
                    std::fill(dst, dst + args.head_dim, 0.0f);
                } else {
                    attend_one(q, *kv.cache, seq, args, i, h, dst);
                }
            }
        }
    }
}

void ReferenceOps::attention_gather(const ConstTensorView& q, const PagedKvGather& kv,
                                    const AttentionArgs& args, TensorView out) {
    SE_CHECK(q.cols == int64_t{args.num_heads} * args.head_dim && out.cols == q.cols &&
             out.rows == q.rows);
    for (const GatherSeq& seq : kv.seqs) {
        SE_CHECK(seq.lists.size() == 1 ||
                 seq.lists.size() == static_cast<size_t>(args.num_kv_heads));
        for (int32_t i = 0; i < seq.q_len; ++i) {
            for (int32_t h = 0; h < args.num_heads; ++h) {
                attend_listed(q, *kv.cache, seq, args, i, h,
                              out.f32_row(seq.q_start + i) + int64_t{h} * args.head_dim);
            }
        }
    }
}

void ReferenceOps::move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                           std::span<const int64_t> to) {
    SE_CHECK(from.size() == to.size());
    const int64_t entry = cache.layout.entry_elems();
    for (size_t i = 0; i < from.size(); ++i) {
        for (int64_t e = 0; e < entry; ++e) {
            for (void* plane : {cache.k_blocks, cache.v_blocks}) {
                store_float(cache.layout.dtype, plane, to[i] * entry + e,
                            load_float(cache.layout.dtype, plane, from[i] * entry + e));
            }
        }
    }
}

}  // namespace se
