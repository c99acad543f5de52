using DroneDelivery.Contracts;
using Microsoft.Azure.Cosmos;

namespace DroneDelivery.DroneScheduler;

/// <summary>The case study's GetDroneUtilization query and the options it runs with — the knobs of steps A2–A4.</summary>
public static class UtilizationQuery
{
    public const string Text = "SELECT * FROM c WHERE c.ownerId = @ownerId AND c.year = @year AND c.month = @month";

    public static QueryDefinition Definition(string ownerId, BillingPeriod period) =>
        new QueryDefinition(Text)
            .WithParameter("@ownerId", ownerId)
            .WithParameter("@year", period.Year)
            .WithParameter("@month", period.Month);

    /// <summary>
    /// <see cref="UtilizationSettings.MaxConcurrency"/>, <see cref="UtilizationSettings.MaxItemCount"/>,
    /// <see cref="UtilizationSettings.MaxBufferedItemCount"/> and, when
    /// <see cref="UtilizationSettings.QueryWithPartitionKey"/>, the owner as partition key.
    /// </summary>
    public static QueryRequestOptions Options(UtilizationSettings settings, string ownerId)
    {
        var options = new QueryRequestOptions { MaxConcurrency = settings.MaxConcurrency };
        if (settings.MaxItemCount is { } maxItemCount)
        {
            options.MaxItemCount = maxItemCount;
        }

        if (settings.MaxBufferedItemCount is { } maxBuffered)
        {
            options.MaxBufferedItemCount = maxBuffered;
        }

        if (settings.QueryWithPartitionKey)
        {
            options.PartitionKey = new PartitionKey(ownerId);
        }

        return options;
    }
}
