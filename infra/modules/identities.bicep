// One user-assigned managed identity per service, federated with that service's Kubernetes
// ServiceAccount (workload identity), plus one for KEDA's operator. Each identity gets only the
// roles its service needs (assigned in the modules that own the resources).

@description('Azure region.')
param location string

@description('Prefix of every resource name.')
param namePrefix string

@description('OIDC issuer URL of the AKS cluster (workload identity).')
param oidcIssuerUrl string

@description('Kubernetes namespace the chart is installed in.')
param kubernetesNamespace string

@description('Names of the services; each has a ServiceAccount of the same name.')
param services array = [
  'gateway'
  'ingestion'
  'workflow'
  'delivery'
  'package'
  'dronescheduler'
]

resource identities 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = [for service in services: {
  name: '${namePrefix}-${service}'
  location: location
}]

resource federations 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = [for (service, i) in services: {
  parent: identities[i]
  name: 'aks-${service}'
  properties: {
    issuer: oidcIssuerUrl
    subject: 'system:serviceaccount:${kubernetesNamespace}:${service}'
    audiences: [
      'api://AzureADTokenExchange'
    ]
  }
}]

// KEDA's operator (AKS add-on, namespace kube-system) reads the queue's length with its own identity.
resource keda 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: '${namePrefix}-keda'
  location: location
}

resource kedaFederation 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials@2023-01-31' = {
  parent: keda
  name: 'aks-keda-operator'
  properties: {
    issuer: oidcIssuerUrl
    subject: 'system:serviceaccount:kube-system:keda-operator'
    audiences: [
      'api://AzureADTokenExchange'
    ]
  }
}

@description('Principal and client id of each service identity (keyed by service name in main.bicep: Bicep cannot index a resource collection with a lambda variable).')
output serviceIdentities array = [for (service, i) in services: {
  service: service
  principalId: identities[i].properties.principalId
  clientId: identities[i].properties.clientId
}]

output kedaPrincipalId string = keda.properties.principalId
output kedaClientId string = keda.properties.clientId
