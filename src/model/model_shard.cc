#include "model/model_shard.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace se {
namespace {

enum class Split : uint8_t { kReplicate, kRows, kCols, kVocabRows };

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Split split_of(std::string_view name) {
    for (std::string_view suffix :
         {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
          "mlp.gate_proj.weight", "mlp.up_proj.weight"}) {
        if (ends_with(name, suffix)) return Split::kRows;
    }
    // Biases are [1, n]: the rank's heads are columns of the one row.
    for (std::string_view suffix :
         {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias",
          "self_attn.o_proj.weight", "mlp.down_proj.weight"}) {
        if (ends_with(name, suffix)) return Split::kCols;
    }
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight") return Split::kVocabRows;
    return Split::kReplicate;
}

Status check_divides(int32_t size, int64_t value, const char* what) {
    if (value % size == 0) return {};
    return invalid_argument(fmt::format(
        "--tensor-parallel-size {} does not divide the model's {} {}", size, value, what));
}

ConstTensorView row_slice(const ConstTensorView& w, int64_t first, int64_t count) {
    return {w.dtype, w.row(first), count, w.cols};
}

Expected<ConstTensorView> col_slice(const std::string& name, const ConstTensorView& w,
                                    int64_t first, int64_t count, WeightStore& out) {
    const int64_t block = dtype_block_elems(w.dtype);
    if (first % block != 0 || count % block != 0) {
        return invalid_argument(fmt::format(
            "weight '{}' ({}) cannot be split at column {}: its {}-element blocks would break; "
            "choose another --tensor-parallel-size",
            name, dtype_name(w.dtype), first, block));
    }
    const int64_t offset = dtype_row_bytes(w.dtype, first);
    const int64_t bytes = dtype_row_bytes(w.dtype, count);
    if (w.rows == 1) {  // one row: its columns are contiguous
        return ConstTensorView(w.dtype, static_cast<const uint8_t*>(w.data) + offset, 1, count);
    }
    SE_ASSIGN_OR_RETURN(HostBuffer copy, HostBuffer::allocate(static_cast<size_t>(bytes * w.rows)));
    for (int64_t r = 0; r < w.rows; ++r) {
        std::memcpy(copy.data() + r * bytes, static_cast<const uint8_t*>(w.row(r)) + offset,
                    static_cast<size_t>(bytes));
    }
    const HostBuffer& kept = out.keep(std::move(copy));
    return ConstTensorView(w.dtype, kept.data(), w.rows, count);
}

}  // namespace

Expected<ModelShard> shard_model(const ModelConfig& full, int32_t rank, int32_t size) {
    if (size < 1 || rank < 0 || rank >= size) {
        return invalid_argument(
            fmt::format("--tensor-parallel-size must be >= 1 (rank {} of {})", rank, size));
    }
    SE_RETURN_IF_ERROR(check_divides(size, full.num_heads, "attention heads"));
    SE_RETURN_IF_ERROR(check_divides(size, full.num_kv_heads, "KV heads"));
    SE_RETURN_IF_ERROR(check_divides(size, full.intermediate_size, "MLP columns"));
    ModelShard shard{.rank = rank, .size = size, .full = full, .local = full};
    shard.vocab_shard = (int64_t{full.vocab_size} + size - 1) / size;
    shard.vocab_first = rank * shard.vocab_shard;
    const int64_t vocab_rows =
        std::min<int64_t>(full.vocab_size, shard.vocab_first + shard.vocab_shard) -
        shard.vocab_first;
    if (vocab_rows <= 0) {
        return invalid_argument(
            fmt::format("--tensor-parallel-size {} leaves rank {} none of the {} vocabulary rows",
                        size, rank, full.vocab_size));
    }
    shard.local.num_heads = full.num_heads / size;
    shard.local.num_kv_heads = full.num_kv_heads / size;
    shard.local.intermediate_size = full.intermediate_size / size;
    shard.local.vocab_size = static_cast<int32_t>(vocab_rows);
    return shard;
}

Expected<WeightStore> shard_weights(const ModelShard& shard, const WeightStore& full) {
    WeightStore out;
    for (const auto& [name, w] : full.tensors()) {
        ConstTensorView part = w;
        switch (split_of(name)) {
            case Split::kReplicate:
                break;
            case Split::kRows: {
                const int64_t rows = w.rows / shard.size;
                part = row_slice(w, shard.rank * rows, rows);
                break;
            }
            case Split::kCols: {
                const int64_t cols = w.cols / shard.size;
                SE_ASSIGN_OR_RETURN(part, col_slice(name, w, shard.rank * cols, cols, out));
                break;
            }
            case Split::kVocabRows:
                part = row_slice(w, shard.vocab_first, shard.local.vocab_size);
                break;
        }
        SE_RETURN_IF_ERROR(out.add(name, part));
    }
    return out;
}

}  // namespace se
