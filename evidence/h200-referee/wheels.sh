#!/usr/bin/env bash
# The wheels a device call carries in the ignored .whl/ (the GPU host's image has torch, numpy, aiohttp, scipy,
# jinja2 and pyyaml, and no package registry): seatrial's other dependencies for CPython 3.12 on x86-64.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .whl
pkgs=(typer==0.16.0 click==8.2.1 rich==14.0.0 shellingham==1.5.4 markdown-it-py==3.0.0 mdurl==0.1.2 pygments==2.19.2
      pydantic==2.11.7 pydantic-core==2.33.2 annotated-types==0.7.0 typing-inspection==0.4.1 typing-extensions==4.14.1
      orjson==3.11.1 xxhash==3.5.0 safetensors==0.5.3 prometheus-client==0.22.1 psutil==7.0.0
      opentelemetry-proto==1.36.0 opentelemetry-api==1.36.0 protobuf==6.31.1 importlib-metadata==8.7.0 zipp==3.23.0
      nvidia-ml-py==12.575.51)
plats=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64 \
         manylinux_2_5_x86_64 manylinux_2_12_x86_64; do plats+=(--platform "$p"); done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${plats[@]}" \
  -d .whl "${pkgs[@]}"
du -sh .whl
