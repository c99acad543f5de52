using System.Net;
using Azure.Messaging.ServiceBus;
using DroneDelivery.Contracts;
using DroneDelivery.TestSupport;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace DroneDelivery.Services.Tests.Infrastructure;

internal static class SystemHelpers
{
    public static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    public static DeliveryRequest NewRequest(string ownerId, DateTimeOffset pickup, string? packageId = null) => new()
    {
        OwnerId = ownerId,
        PickupLocation = "47.64,-122.13",
        DropoffLocation = "47.61,-122.20",
        PickupTime = pickup,
        Deadline = pickup.AddHours(6),
        Expedited = false,
        ConfirmationRequired = ConfirmationType.FingerPrint,
        PackageInfo = new PackageInfo { PackageId = packageId ?? NewId(), Size = PackageSize.Small, Weight = 2.5, Tag = "books" },
    };

    public static ValidDeliveryRequest Valid(this DeliveryRequest request) =>
        request.Validate(new FieldErrors()) ?? throw new ArgumentException("The request is invalid.", nameof(request));

    public static string NewId() => Guid.NewGuid().ToString("N");

    /// <summary>Polls Delivery's status until it satisfies <paramref name="condition"/>.</summary>
    public static async Task<DeliveryStatus> WaitForStatusAsync(this ServiceApp delivery, string deliveryId, Func<DeliveryStatus, bool> condition)
    {
        DeliveryStatus? last = null;
        var reached = await Eventually.TrueAsync(async () =>
        {
            var response = await delivery.Client.GetAsync($"api/deliveries/{deliveryId}/status");
            if (response.StatusCode != HttpStatusCode.OK)
            {
                return false;
            }

            last = await response.ReadAsync<DeliveryStatus>();
            return condition(last);
        }, Patience, TimeSpan.FromMilliseconds(100));
        Assert.True(reached, $"Delivery {deliveryId} did not reach the expected status; last seen: {last?.ToString() ?? "404"}");
        return last!;
    }

    /// <summary>Receives (and removes) the next message of a queue's dead-letter queue.</summary>
    public static async Task<ServiceBusReceivedMessage> ReceiveDeadLetterAsync(this ServiceBusClient client, string queue)
    {
        await using var receiver = client.CreateReceiver(queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter, ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
        var message = await receiver.ReceiveMessageAsync(Patience);
        Assert.NotNull(message);
        return message;
    }

    public static async Task SendAsync(this ServiceBusClient client, string queue, ServiceBusMessage message)
    {
        await using var sender = client.CreateSender(queue);
        await sender.SendMessageAsync(message);
    }

    /// <summary>
    /// A stand-in for a backend that forwards every request to <paramref name="target"/> unless
    /// <paramref name="intercept"/> answers it first (returns non-null).
    /// </summary>
    public static Task<StubServer> StartProxyAsync(Uri target, Func<HttpContext, IResult?> intercept) =>
        StubServer.StartAsync(app =>
        {
            var forward = new HttpClient { BaseAddress = target };
            app.Map("{**path}", async (HttpContext context) =>
            {
                if (intercept(context) is { } answer)
                {
                    await answer.ExecuteAsync(context);
                    return;
                }

                using var request = new HttpRequestMessage(new HttpMethod(context.Request.Method), context.Request.Path.Value!.TrimStart('/') + context.Request.QueryString);
                if (context.Request.ContentLength > 0 || context.Request.Headers.TransferEncoding.Count > 0)
                {
                    var body = new MemoryStream();
                    await context.Request.Body.CopyToAsync(body);
                    request.Content = new ByteArrayContent(body.ToArray());
                    request.Content.Headers.TryAddWithoutValidation("Content-Type", context.Request.ContentType);
                }

                using var response = await forward.SendAsync(request);
                context.Response.StatusCode = (int)response.StatusCode;
                if (response.Content.Headers.ContentType is { } type)
                {
                    context.Response.ContentType = type.ToString();
                }

                await response.Content.CopyToAsync(context.Response.Body);
            });
        });
}
