#!/usr/bin/env bash
# Quantizer quality on the trained testbed (testbed-small, scripts/train_testbed.py): for each quantization type,
# ferrite quantize with a `ferrite imatrix` matrix against llama.cpp's llama-quantize with a llama-imatrix matrix,
# both from the same text, both scored by `ferrite perplexity --kl-divergence` against the F16 conversion on the
# held-out tail of War and Peace (the 10% the model was not trained on; the cut of scripts/train_testbed.py).
#
#   bench/quality.sh LLAMA_CPP_BIN_DIR [WORK_DIR] [TYPE...]
#
# LLAMA_CPP_BIN_DIR holds llama-imatrix and llama-quantize (built outside the repository). Environment:
# CTX (512), IMATRIX_CHUNKS (32, from the training text), KLD_CHUNKS (8), THREADS (2); MODEL: the checkpoint
# directory to convert (testbed-small: the repository keeps no trained weights; here /work/testbed/small), or BASE_F16: an F16 GGUF to use as the base instead
# (the 24M testbed: /work/testbed/large-f16.gguf, converted from scripts/train_testbed.py's large model, same
# tokenizer and text split). Prints one line a type and side: TYPE ferrite|llama.cpp BYTES KLD ±,
# PPL(Q)/PPL(base) ±, same top token %.
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMA=${1:?usage: bench/quality.sh LLAMA_CPP_BIN_DIR [WORK_DIR] [TYPE...]}
WORK=${2:-/tmp/ferrite-quality}
shift $(($# >= 2 ? 2 : 1))
TYPES=("$@")
if [ ${#TYPES[@]} -eq 0 ]; then
  TYPES=(Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K
         IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ4_NL IQ4_XS)
fi
CTX=${CTX:-512} IMATRIX_CHUNKS=${IMATRIX_CHUNKS:-32} KLD_CHUNKS=${KLD_CHUNKS:-8} THREADS=${THREADS:-2}
SHARED=${FERRITE_SHARED:-$(pwd)/../shared}
F=$(pwd)/build/ferrite
mkdir -p "$WORK"

python3 - "$SHARED/text/war-and-peace.txt" "$WORK" <<'EOF'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
cut = text.rfind("\n", 0, int(len(text) * 0.9)) + 1
open(sys.argv[2] + "/train.txt", "w", encoding="utf-8").write(text[:cut])
open(sys.argv[2] + "/heldout.txt", "w", encoding="utf-8").write(text[cut:])
EOF
cd "$WORK"
if [ -n "${BASE_F16:-}" ]; then
  ln -sf "$(cd "$OLDPWD" && realpath "$BASE_F16")" f16.gguf
else
  MODEL=$(cd "$OLDPWD" && realpath "${MODEL:?MODEL: the trained testbed-small folder (scripts/train_testbed.py), or BASE_F16}")
  "$F" convert "$MODEL" -o f16.gguf --outtype f16 --tokenizer-pre llama-bpe >convert.log 2>&1
fi
"$F" imatrix -m f16.gguf -f train.txt -c "$CTX" --chunks "$IMATRIX_CHUNKS" -t "$THREADS" -o ferrite.dat >imatrix_f.log 2>&1
"$LLAMA/llama-imatrix" -m f16.gguf -f train.txt -c "$CTX" --chunks "$IMATRIX_CHUNKS" -t "$THREADS" -o llama.dat \
  >imatrix_l.log 2>&1
"$F" perplexity -m f16.gguf -f heldout.txt -c "$CTX" --chunks "$KLD_CHUNKS" -t "$THREADS" \
  --kl-divergence-base base.kld >base.log 2>&1

field() { grep -E "$1" "$2" | head -1 | sed -E 's/.*: *//'; }
for t in "${TYPES[@]}"; do
  "$F" quantize f16.gguf "f_$t.gguf" "$t" --imatrix ferrite.dat -t "$THREADS" >"q_f_$t.log" 2>&1
  "$LLAMA/llama-quantize" --imatrix llama.dat f16.gguf "l_$t.gguf" "$t" "$THREADS" >"q_l_$t.log" 2>&1
  for s in f l; do
    "$F" perplexity -m "${s}_$t.gguf" -f heldout.txt -c "$CTX" --chunks "$KLD_CHUNKS" -t "$THREADS" \
      --kl-divergence-base base.kld --kl-divergence >"kld_${s}_$t.log" 2>&1
    side=$([ $s = f ] && echo ferrite || echo llama.cpp)
    echo "$t $side $(stat -c %s "${s}_$t.gguf") KLD $(field 'Mean +KLD' "kld_${s}_$t.log")," \
      "PPL ratio $(field 'Mean PPL\(Q\)/PPL\(base\)' "kld_${s}_$t.log")," \
      "same top $(field 'Same top p' "kld_${s}_$t.log")"
  done
done
