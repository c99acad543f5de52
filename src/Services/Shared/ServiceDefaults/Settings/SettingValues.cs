using System.Collections;
using System.Globalization;
using System.Reflection;
using System.Text.RegularExpressions;

namespace DroneDelivery.ServiceDefaults.Settings;

/// <summary>How settings values are shown in logs and error messages without leaking secrets.</summary>
internal static partial class SettingValues
{
    private const string Redacted = "***";

    /// <summary>
    /// The text of a value as it may be logged: <see cref="SecretAttribute"/> properties are hidden
    /// entirely, and the secret parts of connection strings (AccountKey=, SharedAccessKey=, password=)
    /// are masked so the endpoint stays visible.
    /// </summary>
    public static string? Display(PropertyInfo property, object? value)
    {
        if (value is null)
        {
            return null;
        }

        if (property.GetCustomAttribute<SecretAttribute>() is not null)
        {
            return Redacted;
        }

        var text = value switch
        {
            string s => s,
            TimeSpan t => t.ToString("c", CultureInfo.InvariantCulture),
            IFormattable f => f.ToString(null, CultureInfo.InvariantCulture),
            IEnumerable sequence => "[" + string.Join(", ", sequence.Cast<object?>().Select(item => Convert.ToString(item, CultureInfo.InvariantCulture))) + "]",
            _ => value.ToString(),
        };
        return text is null ? null : SecretPart().Replace(text, m => $"{m.Groups[1].Value}={Redacted}");
    }

    /// <summary>Every leaf setting of <paramref name="settings"/> as (configuration key, display value).</summary>
    public static IEnumerable<(string Key, string? Value)> Flatten(object settings, string path)
    {
        foreach (var property in settings.GetType().GetProperties(BindingFlags.Public | BindingFlags.Instance))
        {
            if (property.GetIndexParameters().Length > 0)
            {
                continue;
            }

            var key = $"{path}:{property.Name}";
            var value = property.GetValue(settings);
            if (value is not null && !(value is string) && SettingsValidator<object>.IsSettingsType(property.PropertyType))
            {
                if (value is IDictionary dictionary)
                {
                    foreach (DictionaryEntry entry in dictionary)
                    {
                        foreach (var leaf in entry.Value is null ? [] : Flatten(entry.Value, $"{key}:{entry.Key}"))
                        {
                            yield return leaf;
                        }
                    }
                }
                else if (value is not IEnumerable)
                {
                    foreach (var leaf in Flatten(value, key))
                    {
                        yield return leaf;
                    }
                }

                continue;
            }

            yield return (key, Display(property, value));
        }
    }

    [GeneratedRegex("(AccountKey|SharedAccessKey|Password|password|AccessKey)=([^;]*)", RegexOptions.CultureInvariant)]
    private static partial Regex SecretPart();
}
