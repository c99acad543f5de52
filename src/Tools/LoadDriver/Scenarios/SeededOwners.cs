using System.Globalization;

namespace DroneDelivery.LoadDriver.Scenarios;

/// <summary>The owners the system was seeded with: ids <c>string.Format(Format, i)</c> for i in 0..Count-1.</summary>
/// <param name="Format">Composite format of an owner id with the index as argument 0; default <c>owner-{0:D4}</c>.</param>
/// <param name="Count">How many owners were seeded; default 100, at most <see cref="MaxCount"/>.</param>
public sealed record SeededOwners(string Format = "owner-{0:D4}", int Count = 100)
{
    public const int MaxCount = 100_000;

    public string IdAt(int index) => string.Format(CultureInfo.InvariantCulture, Format, index);

    public string[] AllIds()
    {
        var ids = new string[Count];
        for (var i = 0; i < ids.Length; i++)
        {
            ids[i] = IdAt(i);
        }

        return ids;
    }

    public void Validate()
    {
        if (Count is < 1 or > MaxCount)
        {
            throw new ArgumentException($"The owner count must be between 1 and {MaxCount} (got {Count}).");
        }

        if (string.IsNullOrWhiteSpace(Format))
        {
            throw new ArgumentException("The owner id format must not be empty.");
        }

        try
        {
            if (Count > 1 && IdAt(0) == IdAt(1))
            {
                throw new ArgumentException($"The owner id format '{Format}' does not use the owner index ({{0}}), so every owner would be the same.");
            }
        }
        catch (FormatException e)
        {
            throw new ArgumentException($"The owner id format '{Format}' is not a valid composite format: {e.Message}");
        }
    }
}
