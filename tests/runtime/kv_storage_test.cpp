// KV storage per layer: a cache that stores only its first layers (the CPU
// side of a GPU offload) gives the others no memory and null pointers, and
// still tracks cells for every sequence.
#include <gtest/gtest.h>

#include "model/model.h"
#include "runtime/kv_cache.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

TEST(KvStorage, OnlyTheFirstLayersAreStored) {
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  auto model = model::Model::load(model_path.string());
  const model::HParams& hp = model->hparams();
  ASSERT_GE(hp.n_layer, 2);
  for (TensorType t : {TensorType::F16, TensorType::Q4_0}) {
    runtime::KvCache cache(hp, 64, t, t, 1);
    const model::KvView v = cache.view();
    ASSERT_EQ(static_cast<int64_t>(v.layers.size()), hp.n_layer);
    const bool f16 = t == TensorType::F16;
    EXPECT_NE(f16 ? static_cast<const void*>(v.layers[0].k) : v.layers[0].k_q, nullptr);
    EXPECT_NE(f16 ? static_cast<const void*>(v.layers[0].vt) : v.layers[0].v_q, nullptr);
    for (int64_t il = 1; il < hp.n_layer; ++il) {
      const model::KvLayer& l = v.layers[static_cast<size_t>(il)];
      EXPECT_TRUE(l.k == nullptr && l.vt == nullptr && l.k_q == nullptr && l.v_q == nullptr) << "layer " << il;
    }
    const int32_t seq = 0, pos = 0;
    EXPECT_EQ(cache.allocate(&seq, &pos, 1).size(), 1u);
    EXPECT_EQ(cache.used(), 1);
  }
  // No stored layer at all (everything on the GPU): cells only.
  runtime::KvCache none(hp, 64, TensorType::F16, TensorType::F16, 0);
  for (const model::KvLayer& l : none.view().layers) EXPECT_TRUE(l.k == nullptr && l.vt == nullptr);
}

}  // namespace
}  // namespace ferrite
