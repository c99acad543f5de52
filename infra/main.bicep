// Drone Delivery on Azure: AKS, Cosmos DB, Service Bus, Azure Cache for Redis, Log Analytics and
// Application Insights, Key Vault, a container registry, and one managed identity per service with
// least-privilege role assignments. Every case-study knob that lives in Azure is a parameter, so a
// tuning step is a parameter change (see README.md for the step ↔ parameter table).
//
//   az deployment group create -g <group> -f infra/main.bicep -p infra/main.bicepparam

targetScope = 'resourceGroup'

@description('Azure region of every resource.')
param location string = resourceGroup().location

@description('Prefix of every resource name (lower-case letters and digits).')
@minLength(3)
@maxLength(12)
param namePrefix string = 'dronedlv'

@description('Kubernetes namespace the chart is installed in (the federated credentials name its ServiceAccounts).')
param kubernetesNamespace string = 'dronedelivery'

@description('AKS Kubernetes version, e.g. 1.34 (az aks get-versions -l <region> -o table). Empty: AKS\'s default version for a new cluster; an existing cluster keeps its version.')
param kubernetesVersion string = ''

@description('Workload nodes: 6 in the case studies (B1–B5), 12 in step B6.')
@minValue(1)
@maxValue(100)
param userNodeCount int = 6

@description('VM size of the workload nodes.')
param userNodeVmSize string = 'Standard_D2s_v5'

@description('Availability zones of the node pools, e.g. [\'1\', \'2\', \'3\'] in a region that has them. Empty: none, and the chart\'s zone spread has nothing to spread over. Only when the cluster is created: give it to the first deployment and every later one.')
param availabilityZones array = []

@description('Cosmos DB database id (Helm: cosmosDb.databaseId).')
param cosmosDatabaseId string = 'dronedelivery'

@description('RU/s of the utilization container: 900 in step A1, 2500 from step A2 on.')
@minValue(400)
@maxValue(1000000)
param utilizationThroughput int = 900

@description('Partition key path of the utilization container (holds the delivery id: the fan-out of A1–A3).')
param utilizationPartitionKeyPath string = '/partitionKey'

@description('RU/s of utilization-by-owner, partitioned by /ownerId (step A4); 0 leaves it out.')
@minValue(0)
@maxValue(1000000)
param utilizationByOwnerThroughput int = 0

@description('RU/s of the packages and drones containers: Package\'s aggregate query at scenario A\'s peak needs about 370, with room for bursts.')
@minValue(400)
@maxValue(1000000)
param supportingContainerThroughput int = 1000

@description('Service Bus tier.')
@allowed([
  'Standard'
  'Premium'
])
param serviceBusSku string = 'Premium'

@description('Lock duration of the deliveryrequests queue: PT1M baseline, PT5M in step B5.')
@allowed([
  'PT30S'
  'PT1M'
  'PT2M'
  'PT5M'
])
param queueLockDuration string = 'PT1M'

@description('Deliveries before a message is dead-lettered. 5: the case study saw dead-letters within 8 minutes of 1-minute locks, so fewer than 8 deliveries.')
@minValue(1)
@maxValue(2000)
param queueMaxDeliveryCount int = 5

@description('Azure Cache for Redis tier: Basic C0 (250 MB) in step B1.')
@allowed([
  'Basic'
  'Standard'
  'Premium'
])
param redisSku string = 'Basic'

@description('Azure Cache for Redis size: 0 (C0, 250 MB) in step B1, e.g. 1 (C1, 1 GB) in step B2.')
@minValue(0)
@maxValue(6)
param redisCapacity int = 0

@description('Redis maxmemory-policy; noeviction makes writes fail when the cache is full (B1).')
param redisMaxmemoryPolicy string = 'noeviction'

// Cosmos DB, Service Bus, Redis and the registry have global DNS names: make them unique.
var globalPrefix = '${namePrefix}${take(uniqueString(resourceGroup().id), 6)}'

var cosmosContainers = concat(
  [
    { id: 'packages', partitionKeyPath: '/id', throughput: supportingContainerThroughput }
    { id: 'drones', partitionKeyPath: '/id', throughput: supportingContainerThroughput }
    { id: 'utilization', partitionKeyPath: utilizationPartitionKeyPath, throughput: utilizationThroughput }
  ],
  utilizationByOwnerThroughput > 0 ? [
    { id: 'utilization-by-owner', partitionKeyPath: '/ownerId', throughput: utilizationByOwnerThroughput }
  ] : [])

module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    location: location
    namePrefix: namePrefix
  }
}

module aks 'modules/aks.bicep' = {
  name: 'aks'
  params: {
    location: location
    namePrefix: namePrefix
    kubernetesVersion: kubernetesVersion
    userNodeCount: userNodeCount
    userNodeVmSize: userNodeVmSize
    availabilityZones: availabilityZones
    workspaceId: monitoring.outputs.workspaceId
  }
}

module identities 'modules/identities.bicep' = {
  name: 'identities'
  params: {
    location: location
    namePrefix: namePrefix
    oidcIssuerUrl: aks.outputs.oidcIssuerUrl
    kubernetesNamespace: kubernetesNamespace
  }
}

// Each service identity's principal id, keyed by service name.
var principalIds = toObject(identities.outputs.serviceIdentities, id => id.service, id => id.principalId)

module cosmos 'modules/cosmos.bicep' = {
  name: 'cosmos'
  params: {
    location: location
    namePrefix: globalPrefix
    databaseId: cosmosDatabaseId
    containers: cosmosContainers
    packagePrincipalId: principalIds.package
    droneSchedulerPrincipalId: principalIds.dronescheduler
  }
}

module serviceBus 'modules/servicebus.bicep' = {
  name: 'servicebus'
  params: {
    location: location
    namePrefix: globalPrefix
    sku: serviceBusSku
    lockDuration: queueLockDuration
    maxDeliveryCount: queueMaxDeliveryCount
    principalIds: principalIds
    kedaPrincipalId: identities.outputs.kedaPrincipalId
  }
}

module redis 'modules/redis.bicep' = {
  name: 'redis'
  params: {
    location: location
    namePrefix: globalPrefix
    sku: redisSku
    capacity: redisCapacity
    maxmemoryPolicy: redisMaxmemoryPolicy
  }
}

module keyVault 'modules/keyvault.bicep' = {
  name: 'keyvault'
  params: {
    location: location
    namePrefix: namePrefix
    redisName: redis.outputs.name
    appInsightsName: monitoring.outputs.appInsightsName
    principalIds: principalIds
  }
}

module registry 'modules/registry.bicep' = {
  name: 'registry'
  params: {
    location: location
    namePrefix: namePrefix
    pullPrincipalId: aks.outputs.kubeletPrincipalId
  }
}

// Everything `helm install` needs (docs/deploy-aks.md turns these into --set arguments).
output aksName string = aks.outputs.name
output registryLoginServer string = registry.outputs.loginServer
output tenantId string = subscription().tenantId
output clientIds object = toObject(identities.outputs.serviceIdentities, id => id.service, id => id.clientId)
output kedaIdentityClientId string = identities.outputs.kedaClientId
output cosmosAccountEndpoint string = cosmos.outputs.accountEndpoint
output cosmosAccountName string = cosmos.outputs.accountName
output serviceBusFullyQualifiedNamespace string = serviceBus.outputs.fullyQualifiedNamespace
output keyVaultName string = keyVault.outputs.name
output logAnalyticsWorkspaceId string = monitoring.outputs.workspaceId
