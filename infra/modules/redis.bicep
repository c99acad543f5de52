// Azure Cache for Redis for the Delivery service; the size is the B1 → B2 knob. Its connection
// string is written to Key Vault by keyvault.bicep (StackExchange.Redis 1.x cannot use Entra ID tokens).

@description('Azure region.')
param location string

@description('Prefix of every resource name.')
param namePrefix string

@description('Cache tier: Basic C0 (250 MB) in the case study\'s step B1, a bigger cache in B2.')
@allowed([
  'Basic'
  'Standard'
  'Premium'
])
param sku string = 'Basic'

@description('Cache size within the tier: C0 = 250 MB, C1 = 1 GB, C2 = 2.5 GB (P1 = 6 GB for Premium).')
@minValue(0)
@maxValue(6)
param capacity int = 0

@description('What Redis does at maxmemory; noeviction makes writes fail (B1\'s OOM errors).')
@allowed([
  'noeviction'
  'allkeys-lru'
  'volatile-lru'
  'allkeys-lfu'
  'volatile-lfu'
  'allkeys-random'
  'volatile-random'
  'volatile-ttl'
])
param maxmemoryPolicy string = 'noeviction'

resource cache 'Microsoft.Cache/redis@2024-03-01' = {
  name: '${namePrefix}-redis'
  location: location
  properties: {
    sku: {
      name: sku
      family: sku == 'Premium' ? 'P' : 'C'
      capacity: capacity
    }
    enableNonSslPort: false
    minimumTlsVersion: '1.2'
    redisVersion: '6'
    redisConfiguration: {
      'maxmemory-policy': maxmemoryPolicy
    }
  }
}

@description('The Key Vault module reads the access key from the resource itself, so it never appears in deployment outputs.')
output name string = cache.name
