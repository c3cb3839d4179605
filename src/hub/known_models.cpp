#include "hub/known_models.h"

#include <array>

#include "hub/http_headers.h"

namespace ferrite::hub {
namespace {

// ggml-org/models was renamed ggml-org/models-moved on the hub (the old name
// answers with a redirect), so the new name is used directly. The SHA-256 and
// size of stories260K are those published for that file (they also match
// ../shared/models/stories260K.gguf); the Q4_0 15M model's SHA-256 is the
// published one, its size is left to the server's Content-Length.
constexpr std::array kKnownModels = {
    KnownModel{"stories260K", "ggml-org/models-moved", "tinyllamas/stories260K.gguf",
               "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d", 1185376,
               "Llama 260K parameters trained on TinyStories (F32, 1.1 MiB)"},
    KnownModel{"stories15M-q4_0", "ggml-org/models-moved", "tinyllamas/stories15M-q4_0.gguf",
               "66967fbece6dbe97886593fdbb73589584927e29119ec31f08090732d1861739", 0,
               "Llama 15M parameters trained on TinyStories (Q4_0, about 19 MB)"},
};

constexpr std::string_view kGgufSuffix = ".gguf";


}  // namespace

std::span<const KnownModel> known_models() { return kKnownModels; }

const KnownModel* find_known_model(std::string_view name) {
  if (name.size() > kGgufSuffix.size() && ascii_iequals(name.substr(name.size() - kGgufSuffix.size()), kGgufSuffix)) {
    name.remove_suffix(kGgufSuffix.size());
  }
  for (const KnownModel& m : kKnownModels) {
    if (ascii_iequals(m.name, name)) return &m;
  }
  return nullptr;
}

}  // namespace ferrite::hub
