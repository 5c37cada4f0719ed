// GPU table, model spec validation, vocabulary padding and parameter counts. Expected counts are
// Megatron's layer written out by hand: QKV (h x (h + 2gd)) + bias, projection h x h + bias,
// fc1 h x fc1 + bias, fc2 f x h + bias, two LayerNorms (weight and bias).
#include <gtest/gtest.h>

#include <string>

#include "models/gpu_spec.h"
#include "models/model_spec.h"
#include "models_test_util.h"
#include "sim/error.h"

namespace megasim::models {
namespace {

ModelSpec gpt3_175b() {
  return testing::gpt_175b();
}

ModelSpec llama_like() {  // GQA and SwiGLU, LLaMA-2-7B-sized layer with 8 query groups
  ModelSpec m;
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  m.num_query_groups = 8;
  m.ffn_hidden_size = 11008;
  m.activation = Activation::kSwiglu;
  m.position_embedding_type = PositionEmbedding::kRope;
  m.seq_length = 4096;
  m.vocab_size = 32000;
  m.untie_embeddings_and_output_weights = true;
  return m;
}

std::string error_key(const ModelSpec& m) {
  try {
    validate(m);
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "";
}

TEST(GpuSpec, TableFollowsGpusCsv) {
  const auto gpus = known_gpus();
  ASSERT_EQ(gpus.size(), 5u);
  EXPECT_EQ(gpus[0].name, "A100-SXM-80GB");
  EXPECT_DOUBLE_EQ(gpus[0].peak_bf16_dense_tflops, 312.0);
  EXPECT_DOUBLE_EQ(gpus[0].hbm_tbytes_per_s, 2.039);
  EXPECT_DOUBLE_EQ(gpus[0].best_gemm_efficiency, 0.869);
  EXPECT_EQ(gpus[2].name, "H200-SXM-141GB");
  EXPECT_DOUBLE_EQ(gpus[2].hbm_gbytes, 141.0 * 1.073741824);  // gpus.csv's 141 "GB" are GiB
  EXPECT_EQ(gpus[3].name, "H800-SXM-80GB");
  EXPECT_DOUBLE_EQ(gpus[3].nvlink_total_gbytes_per_s, 400.0);
  EXPECT_DOUBLE_EQ(gpus[3].best_gemm_efficiency, 0.0);  // not measured: unknown
  // Not in gpus.csv: the A100 with NVLink at 400 GB/s (gpu_spec.cc).
  EXPECT_EQ(gpus[4].name, "A800-SXM-80GB");
  EXPECT_DOUBLE_EQ(gpus[4].peak_bf16_dense_tflops, gpus[0].peak_bf16_dense_tflops);
  EXPECT_DOUBLE_EQ(gpus[4].nvlink_total_gbytes_per_s, 400.0);
}

TEST(GpuSpec, FindsFullNamesAndAliasesIgnoringCase) {
  EXPECT_EQ(find_gpu("A100").name, "A100-SXM-80GB");
  EXPECT_EQ(find_gpu("h100").name, "H100-SXM-80GB");
  EXPECT_EQ(find_gpu("H200-sxm-141gb").name, "H200-SXM-141GB");
  EXPECT_EQ(find_gpu("h800").name, "H800-SXM-80GB");
  EXPECT_EQ(find_gpu("A800").name, "A800-SXM-80GB");
}

TEST(GpuSpec, UnknownNameNamesKeyAndValidChoices) {
  try {
    find_gpu("V100", "cluster.gpu");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "cluster.gpu");
    EXPECT_EQ(e.value(), "V100");
    for (const char* name : {"A100-SXM-80GB", "H100-SXM-80GB", "H200-SXM-141GB", "H800-SXM-80GB", "A800-SXM-80GB"}) {
      EXPECT_NE(e.valid().find(name), std::string::npos) << name;
    }
  }
}

TEST(ModelSpec, PadsVocabularyLikeMegatron) {
  ModelSpec m = gpt3_175b();
  EXPECT_EQ(padded_vocab_size(m, 8), 51200);  // 51200 = 50 * (128 * 8)
  m.vocab_size = 64000;                       // 64000 / 1024 = 62.5 -> 63 * 1024
  EXPECT_EQ(padded_vocab_size(m, 8), 63 * 1024);
  m.vocab_size = 50257;  // GPT-2: ceil(50257 / 128) = 393 -> 393 * 128
  EXPECT_EQ(padded_vocab_size(m, 1), 393 * 128);
  EXPECT_EQ(padded_vocab_size(m, 1) % 128, 0);
}

TEST(ModelSpec, DefaultsResolve) {
  ModelSpec m = gpt3_175b();
  EXPECT_EQ(query_groups(m), 96);
  EXPECT_EQ(ffn_hidden(m), 4 * 12288);
  EXPECT_EQ(kv_channels(m), 128);
  EXPECT_EQ(fc1_width(m), 4 * 12288);
  m.activation = Activation::kSwiglu;
  m.hidden_size = 4096;
  m.num_attention_heads = 32;
  // Megatron: int(4h * 2/3 / 64) * 64 = int(10922.67 / 64) * 64 = 170 * 64
  EXPECT_EQ(ffn_hidden(m), 170 * 64);
  EXPECT_EQ(fc1_width(m), 2 * 170 * 64);
}

TEST(ModelSpec, StandardLayerHas12hSquaredPlus13h) {
  const ModelSpec m = gpt3_175b();
  const std::int64_t h = m.hidden_size;
  EXPECT_EQ(layer_parameter_count(m), 12 * h * h + 13 * h);
  // Sharded: QKV 3h^2 + 3h, proj h^2, fc1 4h^2 + 4h, fc2 4h^2 = 12h^2 + 7h; replicated: 4h + 2h.
  EXPECT_EQ(layer_parameter_count_per_tp_rank(m, 8), (12 * h * h + 7 * h) / 8 + 6 * h);
}

TEST(ModelSpec, GqaSwigluLayer) {
  const ModelSpec m = llama_like();
  const std::int64_t h = 4096, gd = 8 * 128, f = 11008;
  const std::int64_t qkv = h * (h + 2 * gd) + (h + 2 * gd);
  const std::int64_t expected = qkv + h * h + h + (h * 2 * f + 2 * f) + (f * h + h) + 4 * h;
  EXPECT_EQ(layer_parameter_count(m), expected);
}

TEST(ModelSpec, TotalCountsTiedEmbeddingsOnceAndPositionTable) {
  const ModelSpec m = gpt3_175b();
  const std::int64_t h = 12288, l = 96, v = 51200, s = 2048;
  // Narayanan et al. 2021: P = 12lh^2 (1 + 13/(12h) + (V + s)/(12lh)), plus the final LayerNorm 2h.
  const std::int64_t narayanan = 12 * l * h * h + 13 * l * h + (v + s) * h;
  EXPECT_EQ(parameter_count(m, 8), narayanan + 2 * h);
  EXPECT_NEAR(static_cast<double>(parameter_count(m, 8)), 175e9, 0.01 * 175e9);
  ModelSpec untied = llama_like();
  const std::int64_t vp = padded_vocab_size(untied, 1);  // rope: no position table; untied: two matrices
  EXPECT_EQ(parameter_count(untied, 1), 2 * vp * 4096 + 32 * layer_parameter_count(untied) + 2 * 4096);
}

TEST(ModelSpec, StagesSumToTotalPlusTiedCopy) {
  for (bool untie : {false, true}) {
    ModelSpec m = gpt3_175b();
    m.untie_embeddings_and_output_weights = untie;
    for (std::int64_t pp : {1, 2, 8}) {
      std::int64_t sum = 0;
      for (std::int64_t stage = 0; stage < pp; ++stage) sum += stage_parameter_count(m, 1, pp, stage);
      // Tied and pp > 1: the last stage keeps its own copy of the word embeddings for the logits.
      const std::int64_t copy = (!untie && pp > 1) ? padded_vocab_size(m, 1) * m.hidden_size : 0;
      EXPECT_EQ(sum, parameter_count(m, 1) + copy) << "untie " << untie << " pp " << pp;
    }
  }
}

TEST(ModelSpec, MiddleStageOf175bAtTp8Pp8HoldsAbout1Over64) {
  const ModelSpec m = gpt3_175b();
  const std::int64_t h = 12288;
  // 96 / 8 = 12 layers, each (12h^2 + 7h)/8 + 6h on one TP rank; nothing else.
  EXPECT_EQ(stage_parameter_count(m, 8, 8, 3), 12 * ((12 * h * h + 7 * h) / 8 + 6 * h));
  EXPECT_NEAR(static_cast<double>(stage_parameter_count(m, 8, 8, 3)), 175e9 / 64, 0.01 * 175e9 / 64);
  // First stage adds V/8 * h word rows and the s x h position table; the last adds V/8 * h + 2h.
  EXPECT_EQ(stage_parameter_count(m, 8, 8, 0) - stage_parameter_count(m, 8, 8, 3), 51200 / 8 * h + 2048 * h);
  EXPECT_EQ(stage_parameter_count(m, 8, 8, 7) - stage_parameter_count(m, 8, 8, 3), 51200 / 8 * h + 2 * h);
}

TEST(ModelSpec, ValidationNamesTheKey) {
  const auto with = [](auto change) {
    ModelSpec m = gpt3_175b();
    change(m);
    return error_key(m);
  };
  EXPECT_EQ(error_key(gpt3_175b()), "");
  EXPECT_EQ(with([](ModelSpec& m) { m.num_layers = 0; }), "model.num_layers");
  EXPECT_EQ(with([](ModelSpec& m) { m.hidden_size = -1; }), "model.hidden_size");
  EXPECT_EQ(with([](ModelSpec& m) { m.num_attention_heads = 0; }), "model.num_attention_heads");
  EXPECT_EQ(with([](ModelSpec& m) { m.num_attention_heads = 100; }), "model.num_attention_heads");  // 12288 % 100
  EXPECT_EQ(with([](ModelSpec& m) { m.seq_length = 0; }), "model.seq_length");
  EXPECT_EQ(with([](ModelSpec& m) { m.vocab_size = 0; }), "model.vocab_size");
  EXPECT_EQ(with([](ModelSpec& m) { m.make_vocab_size_divisible_by = 0; }), "model.make_vocab_size_divisible_by");
  EXPECT_EQ(with([](ModelSpec& m) { m.num_query_groups = 7; }), "model.num_query_groups");    // 96 % 7
  EXPECT_EQ(with([](ModelSpec& m) { m.num_query_groups = 192; }), "model.num_query_groups");  // > heads
  EXPECT_EQ(with([](ModelSpec& m) { m.num_query_groups = -1; }), "model.num_query_groups");
  EXPECT_EQ(with([](ModelSpec& m) { m.ffn_hidden_size = -4; }), "model.ffn_hidden_size");
  EXPECT_EQ(with([](ModelSpec& m) {
              m.hidden_size = 16;  // SwiGLU default int(4*16*2/3/64)*64 = 0
              m.num_attention_heads = 2;
              m.activation = Activation::kSwiglu;
            }),
            "model.ffn_hidden_size");
}

TEST(ModelSpec, ParsesActivationAndPositionEmbedding) {
  EXPECT_EQ(parse_activation("gelu"), Activation::kGelu);
  EXPECT_EQ(parse_activation("swiglu"), Activation::kSwiglu);
  EXPECT_EQ(to_string(Activation::kSwiglu), "swiglu");
  EXPECT_EQ(parse_activation(to_string(Activation::kGelu)), Activation::kGelu);
  EXPECT_EQ(parse_position_embedding("rope"), PositionEmbedding::kRope);
  EXPECT_EQ(parse_position_embedding(to_string(PositionEmbedding::kLearnedAbsolute)),
            PositionEmbedding::kLearnedAbsolute);
  try {
    parse_activation("relu");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "model.activation");
    EXPECT_EQ(e.value(), "relu");
  }
  try {
    parse_position_embedding("alibi");
    FAIL() << "expected ConfigError";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "model.position_embedding_type");
  }
}

}  // namespace
}  // namespace megasim::models
