// libFuzzer target for the GGUF reader: any byte string must either parse or
// raise a ferrite::Error; never crash, hang or allocate without bound.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ferrite::gguf::File f = ferrite::gguf::File::parse(data, size, "fuzz.gguf");
    // Touch what a loader would: the typed metadata summary, every tensor's
    // first and last byte, and every value's rendering.
    (void)ferrite::gguf::summarize(f);
    volatile uint8_t sink = 0;
    for (const auto& t : f.tensors()) {
      if (t.n_bytes > 0) sink = sink ^ t.data[0] ^ t.data[t.n_bytes - 1];
    }
    for (const auto& kv : f.metadata()) (void)kv.value.to_string(4);
  } catch (const ferrite::Error&) {
  }
  return 0;
}
