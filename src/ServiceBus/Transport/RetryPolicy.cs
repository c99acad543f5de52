namespace DroneDelivery.ServiceBus.Transport;

/// <summary>
/// Runs an operation with the client's retry options: transient failures are retried with backoff. The try
/// timeout and the backoff run on the client's clock.
/// </summary>
internal sealed class RetryPolicy(ServiceBusRetryOptions options, TimeProvider time)
{
    public ServiceBusRetryOptions Options { get; } = options;

    public TimeProvider Time { get; } = time;

    public async Task<T> RunAsync<T>(Func<TimeSpan, CancellationToken, Task<T>> operation, string? entityPath, CancellationToken cancellationToken)
    {
        for (var attempt = 0; ; attempt++)
        {
            cancellationToken.ThrowIfCancellationRequested();
            using var tryTimeout = new CancellationTokenSource(Options.TryTimeout, Time);
            using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, tryTimeout.Token);
            Exception failure;
            try
            {
                return await operation(Options.TryTimeout, linked.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
            {
                throw;
            }
            catch (OperationCanceledException e)
            {
                failure = new ServiceBusException("The operation did not complete within the try timeout.", ServiceBusFailureReason.ServiceTimeout, entityPath, e);
            }
            catch (Exception e)
            {
                failure = ServiceBusErrors.From(e, entityPath);
            }

            if (failure is not ServiceBusException { IsTransient: true } || attempt >= Options.MaxRetries)
            {
                throw failure;
            }

            await Task.Delay(Backoff(attempt), Time, cancellationToken).ConfigureAwait(false);
        }
    }

    public Task RunAsync(Func<TimeSpan, CancellationToken, Task> operation, string? entityPath, CancellationToken cancellationToken) =>
        RunAsync(async (timeout, token) =>
        {
            await operation(timeout, token).ConfigureAwait(false);
            return true;
        }, entityPath, cancellationToken);

    private TimeSpan Backoff(int attempt)
    {
        var delay = Options.Mode == ServiceBusRetryMode.Fixed
            ? Options.Delay
            : TimeSpan.FromTicks((long)(Options.Delay.Ticks * Math.Pow(2, attempt) * (0.8 + (Random.Shared.NextDouble() * 0.4))));
        return delay > Options.MaxDelay ? Options.MaxDelay : delay;
    }
}
