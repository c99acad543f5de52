// Log Analytics (Container insights, the case studies' KQL) and a workspace-based Application Insights.

@description('Azure region.')
param location string

@description('Prefix of every resource name.')
param namePrefix string

@description('Days Log Analytics keeps data.')
@minValue(30)
@maxValue(730)
param retentionInDays int = 30

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: '${namePrefix}-logs'
  location: location
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: retentionInDays
  }
}

resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: '${namePrefix}-appinsights'
  location: location
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    IngestionMode: 'LogAnalytics'
  }
}

output workspaceId string = workspace.id
@description('The Key Vault module reads the connection string from the resource itself, so it never appears in deployment outputs.')
output appInsightsName string = appInsights.name
