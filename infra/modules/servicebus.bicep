// Service Bus namespace and the delivery-requests queue; lock duration and max delivery count are
// parameters (step B5). Each identity gets the rights of the calls its service makes: Ingestion
// sends; Workflow receives and settles, and also sends, because a transient failure schedules a
// copy of the message for later (ScheduleMessageAsync needs Send); KEDA reads the queue's length.

@description('Azure region.')
param location string

@description('Prefix of every resource name.')
param namePrefix string

@description('Namespace tier. Premium gives predictable latency under load (the case study used it).')
@allowed([
  'Standard'
  'Premium'
])
param sku string = 'Premium'

@description('Queue name (Helm: the services\' ServiceBus.QueueName and serviceBus.queues).')
param queueName string = 'deliveryrequests'

@description('Peek-lock duration, ISO-8601, PT5S to PT5M. PT1M baseline; PT5M in step B5.')
param lockDuration string = 'PT1M'

@description('Deliveries before a message is dead-lettered.')
@minValue(1)
@maxValue(2000)
param maxDeliveryCount int = 5

@description('Principal id of each service identity, keyed by service name.')
param principalIds object

@description('Principal id of KEDA\'s identity (reads the queue length).')
param kedaPrincipalId string

resource namespace 'Microsoft.ServiceBus/namespaces@2024-01-01' = {
  name: '${namePrefix}-bus'
  location: location
  sku: {
    name: sku
    tier: sku
    capacity: sku == 'Premium' ? 1 : 0
  }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
  }
}

resource queue 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' = {
  parent: namespace
  name: queueName
  properties: {
    lockDuration: lockDuration
    maxDeliveryCount: maxDeliveryCount
    deadLetteringOnMessageExpiration: false
    requiresSession: false
    requiresDuplicateDetection: false
    maxSizeInMegabytes: 1024
  }
}

var roles = {
  sender: '69a216fc-b8fb-44d8-bc22-1f3c2cd27a39' // Azure Service Bus Data Sender
  receiver: '4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0' // Azure Service Bus Data Receiver
  owner: '090c5cfd-751d-490a-894a-3ce6f1109419' // Azure Service Bus Data Owner: KEDA's runtime-properties read needs Manage
}

// Which service holds which role on the queue. Workflow's retry path (ScheduleMessageAsync) sends:
// without Sender every transient failure falls back to Abandon, with no back-off.
var serviceRoles = [
  { service: 'ingestion', role: 'sender' }
  { service: 'workflow', role: 'receiver' }
  { service: 'workflow', role: 'sender' }
]

resource serviceRoleAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [for a in serviceRoles: {
  scope: queue
  name: guid(queue.id, principalIds[a.service], roles[a.role])
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles[a.role])
    principalId: principalIds[a.service]
    principalType: 'ServicePrincipal'
  }
}]

resource kedaRoleAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: queue
  name: guid(queue.id, kedaPrincipalId, roles.owner)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.owner)
    principalId: kedaPrincipalId
    principalType: 'ServicePrincipal'
  }
}

@description('Helm: azure.serviceBus.fullyQualifiedNamespace.')
output fullyQualifiedNamespace string = '${namespace.name}.servicebus.windows.net'
