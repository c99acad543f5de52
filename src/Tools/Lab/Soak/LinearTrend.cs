namespace DroneDelivery.Lab.Soak;

/// <summary>
/// A least-squares line through points: its slope (units of y per unit of x) and the slope's 95 %
/// confidence interval, from the residuals' spread and Student's t with n − 2 degrees of freedom.
/// </summary>
internal sealed record LinearTrend(double Slope, double SlopeLow, double SlopeHigh, int Points)
{
    // Two-sided 95 % quantiles of Student's t for 1 to 30 degrees of freedom.
    private static readonly double[] StudentT95 =
    [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];

    /// <summary>The fit, or null with fewer than three points or all of them at one x.</summary>
    public static LinearTrend? Fit(IReadOnlyList<(double X, double Y)> points)
    {
        var n = points.Count;
        if (n < 3)
        {
            return null;
        }

        var meanX = points.Average(p => p.X);
        var meanY = points.Average(p => p.Y);
        var sxx = points.Sum(p => (p.X - meanX) * (p.X - meanX));
        if (sxx <= 0)
        {
            return null;
        }

        var slope = points.Sum(p => (p.X - meanX) * (p.Y - meanY)) / sxx;
        var intercept = meanY - (slope * meanX);
        var residuals = points.Sum(p => Math.Pow(p.Y - (intercept + (slope * p.X)), 2));
        var halfWidth = TQuantile95(n - 2) * Math.Sqrt(residuals / (n - 2) / sxx);
        return new LinearTrend(slope, slope - halfWidth, slope + halfWidth, n);
    }

    /// <summary>The two-sided 95 % quantile of Student's t: the table to 30 degrees of freedom, then the Cornish–Fisher expansion.</summary>
    internal static double TQuantile95(int degreesOfFreedom)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(degreesOfFreedom, 1);
        if (degreesOfFreedom <= StudentT95.Length)
        {
            return StudentT95[degreesOfFreedom - 1];
        }

        const double Z = 1.959964;
        double df = degreesOfFreedom;
        return Z + ((Math.Pow(Z, 3) + Z) / (4 * df)) + (((5 * Math.Pow(Z, 5)) + (16 * Math.Pow(Z, 3)) + (3 * Z)) / (96 * df * df));
    }
}
