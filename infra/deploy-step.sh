#!/usr/bin/env bash
# Deploys the Azure side of one case-study step: main.bicepparam plus the cumulative changes of
# infra/steps.json up to and including that step, one deployment per stage.
#   infra/deploy-step.sh <step> [resource-group] [deployment-name] [az arguments...]
#   e.g. infra/deploy-step.sh B2    or    infra/deploy-step.sh B2 -p kubernetesVersion=1.34
# Arguments from the first one starting with "-" on (or after "--") go to every
# `az deployment group create` unchanged, after the step's parameters: repeat there the overrides
# of your first deployment (-p kubernetesVersion=..., -p userNodeVmSize=...), which a step's
# deployment would otherwise put back to the template's defaults.
# Needs the Azure CLI (signed in) and jq. DRY_RUN=1 prints the commands instead of running them.
set -euo pipefail
cd "$(dirname "$0")"

step="${1:-}"
[ -n "$step" ] || { sed -n '2,10p' "$(basename "$0")" >&2; exit 2; }
shift
positional=()
while [ $# -gt 0 ] && [ "${#positional[@]}" -lt 2 ] && [ "${1:0:1}" != "-" ]; do
  positional+=("$1"); shift
done
[ "${1:-}" != "--" ] || shift
extra=("$@")
group="${positional[0]:-dronedelivery}"
name="${positional[1]:-dronedelivery}"
command -v jq >/dev/null || { echo "deploy-step: jq is required" >&2; exit 2; }

scenario=$(jq -r --arg s "$step" '.scenarios | to_entries[] | select(any(.value[]; .step == $s)) | .key' steps.json)
[ -n "$scenario" ] || { echo "deploy-step: unknown step '$step' (steps: $(jq -r '[.scenarios[][].step] | join(", ")' steps.json))" >&2; exit 2; }

# Changes of the earlier steps of the scenario, merged in order: the starting point of this step.
earlier=$(jq -c --arg sc "$scenario" --arg s "$step" '
  .scenarios[$sc] as $steps
  | ($steps | map(.step) | index($s)) as $i
  | reduce ($steps[:$i][] .stages[]) as $stage ({}; . + $stage)' steps.json)
stages=$(jq -c --arg sc "$scenario" --arg s "$step" '.scenarios[$sc][] | select(.step == $s) | .stages' steps.json)

deploy() {
  local parameters=() key value
  while IFS=$'\t' read -r key value; do
    [ -n "$key" ] && parameters+=(-p "$key=$value")
  done < <(echo "$1" | jq -r 'to_entries[] | [.key, (.value | tostring)] | @tsv')
  local command=(az deployment group create -g "$group" -n "$name" -f main.bicep -p main.bicepparam "${parameters[@]}" "${extra[@]}")
  if [ "${DRY_RUN:-0}" = 1 ]; then echo "${command[*]}"; else "${command[@]}"; fi
}

if [ "$(echo "$stages" | jq length)" -eq 0 ]; then
  deploy "$earlier"
else
  cumulative="$earlier"
  for stage in $(echo "$stages" | jq -c '.[]'); do
    cumulative=$(jq -cn --argjson a "$cumulative" --argjson b "$stage" '$a + $b')
    deploy "$cumulative"
  done
fi
