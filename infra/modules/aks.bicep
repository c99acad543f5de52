// AKS with workload identity (OIDC issuer), the Key Vault secrets provider (Secrets Store CSI),
// Cilium network policies (the chart's NetworkPolicies are enforced), KEDA, and Container insights.

@description('Azure region.')
param location string

@description('Prefix of every resource name.')
param namePrefix string

@description('Kubernetes version. Empty: left out of the request, so AKS picks its default version for a new cluster and an existing cluster keeps its version (no downgrade).')
param kubernetesVersion string = ''

@description('Nodes of the system pool.')
@minValue(1)
@maxValue(5)
param systemNodeCount int = 2

@description('Nodes of the workload pool: 6 in the case studies, 12 in step B6.')
@minValue(1)
@maxValue(100)
param userNodeCount int = 6

@description('VM size of the workload pool (the case studies used 2-vCPU D-series nodes).')
param userNodeVmSize string = 'Standard_D2s_v5'

@description('VM size of the system pool.')
param systemNodeVmSize string = 'Standard_D2s_v5'

@description('Availability zones of both node pools, e.g. [\'1\', \'2\', \'3\']. Empty: no zones, so the chart\'s spread over topology.kubernetes.io/zone has one zone to spread over. Fixed when a pool is created: AKS cannot add zones to an existing pool.')
param availabilityZones array = []

@description('Install the KEDA add-on (the chart\'s workflow.keda).')
param enableKeda bool = true

@description('Log Analytics workspace for Container insights.')
param workspaceId string

resource cluster 'Microsoft.ContainerService/managedClusters@2024-09-01' = {
  name: '${namePrefix}-aks'
  location: location
  identity: {
    type: 'SystemAssigned'
  }
  properties: {
    ...(empty(kubernetesVersion) ? {} : { kubernetesVersion: kubernetesVersion })
    dnsPrefix: '${namePrefix}-aks'
    enableRBAC: true
    oidcIssuerProfile: {
      enabled: true
    }
    securityProfile: {
      workloadIdentity: {
        enabled: true
      }
    }
    agentPoolProfiles: [
      {
        name: 'system'
        mode: 'System'
        count: systemNodeCount
        vmSize: systemNodeVmSize
        osType: 'Linux'
        osSKU: 'AzureLinux'
        type: 'VirtualMachineScaleSets'
        ...(empty(availabilityZones) ? {} : { availabilityZones: availabilityZones })
        nodeTaints: [
          'CriticalAddonsOnly=true:NoSchedule'
        ]
      }
      {
        name: 'workload'
        mode: 'User'
        count: userNodeCount
        vmSize: userNodeVmSize
        osType: 'Linux'
        osSKU: 'AzureLinux'
        type: 'VirtualMachineScaleSets'
        ...(empty(availabilityZones) ? {} : { availabilityZones: availabilityZones })
      }
    ]
    networkProfile: {
      networkPlugin: 'azure'
      networkPluginMode: 'overlay'
      networkDataplane: 'cilium'
      networkPolicy: 'cilium'
    }
    addonProfiles: {
      azureKeyvaultSecretsProvider: {
        enabled: true
        config: {
          enableSecretRotation: 'true'
        }
      }
      omsagent: {
        enabled: true
        config: {
          logAnalyticsWorkspaceResourceID: workspaceId
          useAADAuth: 'true'
        }
      }
    }
    // The application routing add-on (managed NGINX, namespace app-routing-system): the ingress
    // class webapprouting.kubernetes.azure.com that docs/deploy-aks.md installs the chart with.
    ingressProfile: {
      webAppRouting: {
        enabled: true
      }
    }
    workloadAutoScalerProfile: {
      keda: {
        enabled: enableKeda
      }
    }
  }
}

// Container insights the current way: the agent authenticates with the cluster's identity
// (useAADAuth) and a data collection rule says what goes to the workspace. Without the rule, the
// key-based setup collects nothing, and the node and pod CPU the case studies read stays empty.
resource containerInsightsRule 'Microsoft.Insights/dataCollectionRules@2022-06-01' = {
  name: 'MSCI-${location}-${cluster.name}'
  location: location
  kind: 'Linux'
  properties: {
    dataSources: {
      extensions: [
        {
          name: 'ContainerInsightsExtension'
          extensionName: 'ContainerInsights'
          streams: [
            'Microsoft-ContainerInsights-Group-Default'
          ]
          extensionSettings: {
            dataCollectionSettings: {
              interval: '1m'
              namespaceFilteringMode: 'Off'
              enableContainerLogV2: true
            }
          }
        }
      ]
    }
    destinations: {
      logAnalytics: [
        {
          name: 'workspace'
          workspaceResourceId: workspaceId
        }
      ]
    }
    dataFlows: [
      {
        streams: [
          'Microsoft-ContainerInsights-Group-Default'
        ]
        destinations: [
          'workspace'
        ]
      }
    ]
  }
}

resource containerInsightsAssociation 'Microsoft.Insights/dataCollectionRuleAssociations@2022-06-01' = {
  name: 'ContainerInsightsExtension'
  scope: cluster
  properties: {
    dataCollectionRuleId: containerInsightsRule.id
  }
}

output name string = cluster.name
output oidcIssuerUrl string = cluster.properties.oidcIssuerProfile.issuerURL
output kubeletPrincipalId string = cluster.properties.identityProfile.kubeletidentity.objectId
