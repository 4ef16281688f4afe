#include "sparse/sparse_controller.h"

namespace se {

Status SparseController::begin_step(const StepPlan& plan) {
    SE_CHECK(!in_step_, "begin_step twice without end_step");
    SE_RETURN_IF_ERROR(cache_.prepare_step(plan));
    phase_ = plan.phase;
    in_step_ = true;
    runtime_.prepare_step(plan);
    return {};
}

void SparseController::end_step() {
    SE_CHECK(in_step_, "end_step without begin_step");
    runtime_.finish_step();
    in_step_ = false;
}

void SparseController::store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) {
    SE_CHECK(in_step_);
    cache_.store(layer, k, v);
}

void SparseController::attend(int32_t layer, const ConstTensorView& q, TensorView out) {
    SE_CHECK(in_step_);
    const Selection selection = phase_ == StepPhase::kPrefill ? runtime_.select_prefill(layer, q)
                                                              : runtime_.select_decode(layer, q);
    const AttentionView view = cache_.view(layer, selection);
    switch (view.kind()) {
        case PayloadKind::kPagedDense:
            ops_.attention(q, std::get<PagedKvRead>(view.payload), args_, out);
            break;
    }
    runtime_.on_attention_end(layer);
}

void SparseController::on_layer_end(int32_t layer) {
    runtime_.on_layer_end(layer);
}

}  // namespace se
