// Cosmos DB for NoSQL: the account (Entra ID only), the database and the containers, with partition
// key paths and RU/s as parameters (steps A1, A2, A4 are parameter changes), and data-plane role
// assignments scoped to the containers each service uses.

@description('Azure region.')
param location string

@description('Prefix of every resource name.')
param namePrefix string

@description('Database id (Helm: cosmosDb.databaseId).')
param databaseId string = 'dronedelivery'

@description('The containers: id, partitionKeyPath, throughput (RU/s, manual, at least 400). Helm: cosmosDb.containers.')
param containers array

@description('Principal id of the package service identity.')
param packagePrincipalId string

@description('Principal id of the dronescheduler service identity.')
param droneSchedulerPrincipalId string

@description('Containers the package service reads and writes.')
param packageContainers array = [
  'packages'
]

@description('Containers the dronescheduler service reads and writes (and its seed job loads).')
param droneSchedulerContainers array = [
  'drones'
  'utilization'
  'utilization-by-owner'
]

resource account 'Microsoft.DocumentDB/databaseAccounts@2024-11-15' = {
  name: '${namePrefix}-cosmos'
  location: location
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    consistencyPolicy: {
      defaultConsistencyLevel: 'Session'
    }
    locations: [
      {
        locationName: location
        failoverPriority: 0
        isZoneRedundant: false
      }
    ]
    // Keys off: the services authenticate with their workload identities.
    disableLocalAuth: true
    disableKeyBasedMetadataWriteAccess: true
    minimalTlsVersion: 'Tls12'
  }
}

resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2024-11-15' = {
  parent: account
  name: databaseId
  properties: {
    resource: {
      id: databaseId
    }
  }
}

resource sqlContainers 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2024-11-15' = [for container in containers: {
  parent: database
  name: container.id
  properties: {
    resource: {
      id: container.id
      partitionKey: {
        paths: [
          container.partitionKeyPath
        ]
        kind: 'Hash'
        version: 2
      }
    }
    options: {
      throughput: container.throughput
    }
  }
}]

// Built-in "Cosmos DB Built-in Data Contributor": item reads, writes and queries, no control plane.
var dataContributor = '${account.id}/sqlRoleDefinitions/00000000-0000-0000-0000-000000000002'

var assignments = concat(
  map(filter(packageContainers, c => contains(map(containers, x => x.id), c)), c => { principalId: packagePrincipalId, container: c }),
  map(filter(droneSchedulerContainers, c => contains(map(containers, x => x.id), c)), c => { principalId: droneSchedulerPrincipalId, container: c }))

// One at a time: the account takes an exclusive lock per role-assignment write, so parallel writes
// fail a first deployment with a conflict.
@batchSize(1)
resource roleAssignments 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2024-11-15' = [for a in assignments: {
  parent: account
  name: guid(account.id, a.principalId, a.container)
  properties: {
    roleDefinitionId: dataContributor
    principalId: a.principalId
    scope: '${account.id}/dbs/${databaseId}/colls/${a.container}'
  }
  dependsOn: [
    sqlContainers
  ]
}]

@description('Helm: azure.cosmosDb.accountEndpoint.')
output accountEndpoint string = account.properties.documentEndpoint
output accountName string = account.name
