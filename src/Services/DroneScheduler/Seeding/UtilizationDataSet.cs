using DroneDelivery.Contracts;

namespace DroneDelivery.DroneScheduler.Seeding;

/// <summary>
/// The deterministic utilization data set of scenario A: for each owner <c>owner-NNNN</c>, each month
/// and each delivery, one <see cref="UtilizationDocument"/> with id <c>{owner}-{yyyyMM}-{NNNNN}</c> and
/// miles (30–500) and hours (1–30) drawn from a generator seeded by (seed, owner, month) — so the same
/// options always give the same documents, whatever order they are written in.
/// </summary>
public static class UtilizationDataSet
{
    public static IEnumerable<UtilizationDocument> Generate(SeedOptions options)
    {
        for (var owner = 0; owner < options.Owners; owner++)
        {
            var ownerId = SeedOptions.OwnerId(owner);
            for (var month = 0; month < options.Months; month++)
            {
                var period = Add(options.FirstMonth, month);
                var random = new Random(GeneratorSeed(options.Seed, owner, month));
                for (var delivery = 0; delivery < options.DeliveriesPerOwnerMonth; delivery++)
                {
                    var deliveryId = $"{ownerId}-{period.Year:D4}{period.Month:D2}-{delivery:D5}";
                    var miles = Math.Round(30 + random.NextDouble() * 470, 2);
                    var hours = Math.Round(1 + random.NextDouble() * 29, 2);
                    yield return UtilizationDocument.For(
                        deliveryId, DroneFleet.DroneFor(deliveryId, options.FleetSize), ownerId, period, new FlightPlan(miles, hours));
                }
            }
        }
    }

    // Not HashCode.Combine: that is randomised per process, and the data set must not be.
    private static int GeneratorSeed(int seed, int owner, int month) => unchecked((((seed * 397) ^ owner) * 397) ^ month) & int.MaxValue;

    public static BillingPeriod Add(BillingPeriod period, int months)
    {
        var index = period.Year * 12 + (period.Month - 1) + months;
        return new BillingPeriod(index / 12, index % 12 + 1);
    }
}
