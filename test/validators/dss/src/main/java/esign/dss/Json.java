package esign.dss;

import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** A minimal JSON writer for the verdicts (maps, lists, strings, booleans, numbers, null): no dependency for so little. */
final class Json {

	private Json() {
	}

	static String write(Object value) {
		StringBuilder sb = new StringBuilder();
		append(sb, value);
		return sb.toString();
	}

	private static void append(StringBuilder sb, Object value) {
		if (value == null) {
			sb.append("null");
		} else if (value instanceof String) {
			string(sb, (String) value);
		} else if (value instanceof Boolean || value instanceof Number) {
			sb.append(value);
		} else if (value instanceof Map) {
			sb.append('{');
			Iterator<? extends Map.Entry<?, ?>> it = ((Map<?, ?>) value).entrySet().iterator();
			while (it.hasNext()) {
				Map.Entry<?, ?> e = it.next();
				string(sb, String.valueOf(e.getKey()));
				sb.append(':');
				append(sb, e.getValue());
				if (it.hasNext()) {
					sb.append(',');
				}
			}
			sb.append('}');
		} else if (value instanceof List) {
			sb.append('[');
			Iterator<?> it = ((List<?>) value).iterator();
			while (it.hasNext()) {
				append(sb, it.next());
				if (it.hasNext()) {
					sb.append(',');
				}
			}
			sb.append(']');
		} else {
			string(sb, value.toString());
		}
	}

	private static void string(StringBuilder sb, String s) {
		sb.append('"');
		for (int i = 0; i < s.length(); i++) {
			char c = s.charAt(i);
			switch (c) {
			case '"':
				sb.append("\\\"");
				break;
			case '\\':
				sb.append("\\\\");
				break;
			case '\n':
				sb.append("\\n");
				break;
			case '\r':
				sb.append("\\r");
				break;
			case '\t':
				sb.append("\\t");
				break;
			default:
				if (c < 0x20 || c == 0x2028 || c == 0x2029) {
					sb.append(String.format("\\u%04x", (int) c));
				} else {
					sb.append(c);
				}
			}
		}
		sb.append('"');
	}
}
