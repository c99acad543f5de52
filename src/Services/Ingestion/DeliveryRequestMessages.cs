using System.Diagnostics;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Messaging;

namespace DroneDelivery.Ingestion;

/// <summary>Builds the queue messages of <see cref="DeliveryMessages"/>: JSON body, operation, delivery id and the request's trace context.</summary>
internal static class DeliveryRequestMessages
{
    /// <summary>A new delivery; its MessageId is the delivery id, so the queue's duplicate detection (if on) recognises a resend.</summary>
    public static ServiceBusMessage Delivery(string deliveryId, ValidDeliveryRequest request) =>
        Create(DeliveryMessages.Delivery, deliveryId, deliveryId, DeliveryRequestMessage.From(deliveryId, request));

    public static ServiceBusMessage Cancel(string deliveryId) =>
        Create(DeliveryMessages.Cancel, deliveryId, Guid.NewGuid().ToString("N"), new CancelMessage(deliveryId));

    public static ServiceBusMessage Reschedule(string deliveryId, RescheduleRequest change) =>
        Create(DeliveryMessages.Reschedule, deliveryId, Guid.NewGuid().ToString("N"), new RescheduleMessage
        {
            DeliveryId = deliveryId,
            PickupLocation = change.PickupLocation,
            DropoffLocation = change.DropoffLocation,
            PickupTime = change.PickupTime,
            Deadline = change.Deadline,
        });

    private static ServiceBusMessage Create<T>(string operation, string deliveryId, string messageId, T body)
    {
        var message = new ServiceBusMessage(BinaryData.FromObjectAsJson(body, ContractJson.Options))
        {
            MessageId = messageId,
            ContentType = DeliveryMessages.ContentType,
            Subject = operation,
        };
        message.ApplicationProperties[DeliveryMessages.OperationProperty] = operation;
        message.ApplicationProperties[DeliveryMessages.DeliveryIdProperty] = deliveryId;

        // The request's trace context, set now: the batch is sent later, from another context. The SDK leaves a
        // Diagnostic-Id it finds in place, and its processor continues the trace from it.
        if (Activity.Current is { } activity)
        {
            message.ApplicationProperties[ServiceBusClientTelemetry.DiagnosticIdProperty] = activity.Id!;
            message.ApplicationProperties[ServiceBusClientTelemetry.TraceParentProperty] = activity.Id!;
        }

        return message;
    }
}
