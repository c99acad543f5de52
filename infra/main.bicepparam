// The case studies' baseline (steps A1 and B1). Each step's Azure-side change is one parameter:
// see README.md. Deploy: az deployment group create -g <group> -f infra/main.bicep -p infra/main.bicepparam
using 'main.bicep'

param namePrefix = 'dronedlv'
param kubernetesNamespace = 'dronedelivery'
param userNodeCount = 6
param utilizationThroughput = 900
param utilizationByOwnerThroughput = 0
param queueLockDuration = 'PT1M'
param redisSku = 'Basic'
param redisCapacity = 0
