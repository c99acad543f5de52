#!/usr/bin/env bash
# Deploys the Azure side of one case-study step: main.bicepparam plus the cumulative changes of
# infra/steps.json up to and including that step, one deployment per stage. When the resource
# group is further back on the scenario's path than the step before (B4 on a fresh group), the
# stages in between are deployed first, in order: Azure Cache for Redis moves one tier or one size
# at a time.
#   infra/deploy-step.sh <step> [resource-group] [deployment-name] [az arguments...]
#   e.g. infra/deploy-step.sh B2    or    infra/deploy-step.sh B2 -p kubernetesVersion=1.34
# Arguments from the first one starting with "-" on (or after "--") go to every
# `az deployment group create` unchanged, after the step's parameters: repeat there the overrides
# of your first deployment (-p kubernetesVersion=..., -p userNodeVmSize=...), which a step's
# deployment would otherwise put back to the template's defaults.
# Parameters only the OTHER scenario's steps change keep the values of the last deployment of that
# name, so replaying A after B2 leaves the Standard C1 cache alone (Azure refuses a move back to
# Basic C0) and replaying B after A4 keeps the owner-partitioned container.
# Needs the Azure CLI (signed in) and jq. DRY_RUN=1 prints the commands instead of running them
# (and assumes the step before was the last one deployed); DEPLOYED_PARAMETERS=<file> reads the
# last deployment's parameters from `az deployment group show --query properties.parameters` output.
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

# The last deployment's parameters, as strings; empty when nothing is known.
if [ -n "${DEPLOYED_PARAMETERS:-}" ]; then
  deployed=$(jq -c 'map_values(.value | tostring)' "$DEPLOYED_PARAMETERS")
elif [ "${DRY_RUN:-0}" = 1 ]; then
  deployed='null'
else
  deployed=$(az deployment group show -g "$group" -n "$name" --query properties.parameters -o json 2>/dev/null \
    | jq -c 'map_values(.value | tostring)' 2>/dev/null) || deployed='{}'
  [ -n "$deployed" ] || deployed='{}'
fi

# main.bicepparam's values: where every scenario starts.
baseline=$(sed -n "s/^param \([A-Za-z0-9_]*\) = '\{0,1\}\([^']*\)'\{0,1\}\$/\1\t\2/p" main.bicepparam \
  | jq -Rn '[inputs | split("\t") | {(.[0]): .[1]}] | add')

# The scenario's path up to this step: its starting state, then the state after each stage. What
# only the other scenario changes keeps the deployed value.
path=$(jq -c --arg sc "$scenario" --arg s "$step" --argjson deployed "$deployed" --argjson baseline "$baseline" '
  ([.scenarios | to_entries[] | select(.key != $sc) | .value[].stages[] | keys[]] | unique) as $others
  | ([.scenarios[$sc][].stages[] | keys[]] | unique) as $mine
  | (($baseline | with_entries(select(.key as $k | $mine | index($k))))
     + (($deployed // {}) | with_entries(select(.key as $k | $others | index($k))))) as $start
  | .scenarios[$sc] as $steps
  | ($steps | map(.step) | index($s)) as $i
  | reduce ($steps[:$i + 1][] as $st | $st.stages[] | {step: $st.step, change: .}) as $x
      ([{step: null, parameters: $start}]; . + [{step: $x.step, parameters: (.[-1].parameters + ($x.change | map_values(tostring)))}])' steps.json)
mine=$(jq -c --arg sc "$scenario" '[.scenarios[$sc][].stages[] | keys[]] | unique' steps.json)
last=$(echo "$path" | jq 'length - 1')
# Index of the state just before this step's own stages.
before=$(echo "$path" | jq --arg s "$step" '(map(.step) | index($s)) // length | . - 1')

# Where the resource group stands on that path: the last state whose scenario parameters match the
# deployed ones (missing ones are main.bicepparam's). Unknown (DRY_RUN) or off the path: the state
# before this step.
from=$(echo "$path" | jq --argjson deployed "$deployed" --argjson mine "$mine" --argjson before "$before" --argjson baseline "$baseline" '
  if $deployed == null then $before
  else
    (($baseline + $deployed) | with_entries(select(.key as $k | $mine | index($k)))) as $now
    | [to_entries[] | select(.key <= $before)
       | select((.value.parameters | with_entries(select(.key as $k | $mine | index($k)))) == $now) | .key]
    | last // $before
  end')

deploy() {
  local parameters=() key value
  while IFS=$'\t' read -r key value; do
    [ -n "$key" ] && parameters+=(-p "$key=$value")
  done < <(echo "$1" | jq -r 'to_entries[] | [.key, .value] | @tsv')
  local command=(az deployment group create -g "$group" -n "$name" -f main.bicep -p main.bicepparam "${parameters[@]}" "${extra[@]}")
  if [ "${DRY_RUN:-0}" = 1 ]; then echo "${command[*]}"; else "${command[@]}"; fi
}

if [ "$from" -ge "$last" ]; then
  deploy "$(echo "$path" | jq -c '.[-1].parameters')"
else
  for i in $(seq $((from + 1)) "$last"); do
    deploy "$(echo "$path" | jq -c --argjson i "$i" '.[$i].parameters')"
  done
fi
