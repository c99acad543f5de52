// Key Vault (RBAC) with the two connection strings that cannot use Entra ID, each readable only by
// the identities that need it: Redis by delivery, Application Insights by every service.

@description('Azure region.')
param location string

@description('Prefix of the vault name (with a unique suffix, cut to Key Vault\'s 24 characters).')
param namePrefix string

@description('Tenant of the vault.')
param tenantId string = subscription().tenantId

@description('Name of the Azure Cache for Redis whose connection string is stored.')
param redisName string

@description('Name of the Application Insights component whose connection string is stored.')
param appInsightsName string

@description('Principal id of each service identity, keyed by service name.')
param principalIds object

// Read here rather than passed in, so no secret travels through deployment parameters or outputs.
resource cache 'Microsoft.Cache/redis@2024-03-01' existing = {
  name: redisName
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: appInsightsName
}

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: take('${namePrefix}kv${uniqueString(resourceGroup().id)}', 24)
  location: location
  properties: {
    tenantId: tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
    publicNetworkAccess: 'Enabled'
  }
}

resource redisSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'redis-connection-string'
  properties: {
    value: '${cache.properties.hostName}:${cache.properties.sslPort},password=${cache.listKeys().primaryKey},ssl=True,abortConnect=False'
  }
}

resource appInsightsSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'applicationinsights-connection-string'
  properties: {
    value: appInsights.properties.ConnectionString
  }
}

var secretsUser = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '4633458b-17de-408a-b874-0445c86b69e6') // Key Vault Secrets User

resource redisReader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: redisSecret
  name: guid(redisSecret.id, principalIds.delivery)
  properties: {
    roleDefinitionId: secretsUser
    principalId: principalIds.delivery
    principalType: 'ServicePrincipal'
  }
}

resource appInsightsReaders 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for service in items(principalIds): {
  scope: appInsightsSecret
  name: guid(appInsightsSecret.id, service.value)
  properties: {
    roleDefinitionId: secretsUser
    principalId: service.value
    principalType: 'ServicePrincipal'
  }
}]

@description('Helm: azure.keyVault.name.')
output name string = vault.name
