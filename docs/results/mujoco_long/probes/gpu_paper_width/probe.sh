#!/bin/bash
# Paper-width learner on long-build data: Walker-2D-Params and Sparse-Cheetah-Fwd-Back, one seed.
# Usage: bash .devdata/probe.sh DEVICE STEPS EVAL_EVERY LIMIT_S OUTDIR
set -u
DEV=$1; STEPS=$2; EVERY=$3; LIMIT=$4; OUTD=$5
export FOCALPP_DATA=$PWD/.devdata/datasets OMP_NUM_THREADS=2 PYTHONUNBUFFERED=1 MUJOCO_GL=disable
PAPER=(--gin_param 'brac.hidden = (256, 256, 256)' --gin_param 'dual_kl_critic.hidden = (256, 256, 256)'
  --gin_param 'mlp_encoder.hidden = (200, 200, 200)' --gin_param 'sequence_attention.d_model = 128'
  --gin_param 'sequence_attention.heads = 8' --gin_param 'sequence_attention.blocks = 3'
  --gin_param 'sequence_attention.dropout = 0.1' --gin_param 'focal.context_batch = 512'
  --gin_param 'focal.rl_batch = 256' --gin_param "focal.steps = $STEPS"
  --gin_param "focal.eval_every = $EVERY" --gin_param "focal.precision = 'fp32'")
mkdir -p $OUTD
go() {  # name recipe env lr
  timeout -s INT $LIMIT python3 tools/run.py --recipe $2 --env $3 --scale cpu_long --seed 0 \
    --device $DEV "${PAPER[@]}" --gin_param "brac.lr = $4" --out $OUTD/$1 > $OUTD/$1.log 2>&1 &
}
go walker-focal-lr3e-3 focal.gin walker_params 3e-3
go walker-focal-lr3e-4 focal.gin walker_params 3e-4
go walker-focalpp-lr3e-3 focalpp.gin walker_params 3e-3
go walker-focalpp-lr3e-4 focalpp.gin walker_params 3e-4
go fwdback-focal-lr3e-3 focal.gin sparse_cheetah_fwd_back 3e-3
go fwdback-focalpp-lr3e-3 focalpp.gin sparse_cheetah_fwd_back 3e-3
wait
nvidia-smi --query-gpu=name,memory.used --format=csv 2>/dev/null
for f in $OUTD/*.log; do echo "== $f"; tail -3 $f; done
